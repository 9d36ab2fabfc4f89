"""Black-box transfer of MATCHA perturbations (paper, "Transfer").

The successful token-level perturbed questions of a white-box attack run are replayed on another model,
typically one behind an API: the target model is asked the *original* and the *perturbed* question with the
source run's answer-first prompt, both answers are graded against the gold answer, and the perturbed
reasoning is judged against the original reasoning. Transfer rate = successes (answer still correct,
reasoning judged wrong) among the questions the target model answers correctly on the original question
(:func:`robusteval.metrics.matcha.transfer_metrics`).

Stages in the new run store:

* ``transfer_generation``: one unit per generation (original or perturbed question of one example), keyed by
  the target model's name, the example, which question it is and the full request (prompt, exemplar prefix,
  temperature, seed, budget); a killed run resumes and a finished one computes nothing new.
* ``judge``: the reasoning judge's cached verdicts (:func:`robusteval.judges.with_cache`).
* ``transfer_outcome``: one record per transferred example (cheap; rewritten on every invocation).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.attacks.matcha.transfer_config import TransferConfig
from robusteval.data.answers import answers_match
from robusteval.data.answers.completion import read_completion
from robusteval.errors import UserError
from robusteval.judges import (
    UNCLASSIFIED,
    Judge,
    ReasoningItem,
    attach_error_types,
    error_type_summary,
)
from robusteval.lifecycle import public_entry
from robusteval.metrics.matcha import transfer_metrics
from robusteval.models import Backend, GenerationRequest
from robusteval.models.identity import backend_identity, backend_key
from robusteval.prompts.answer_first import (
    AnswerFirstPrompt,
    ExemplarSet,
    exemplar_style,
    load_exemplars,
)
from robusteval.runner import run_units
from robusteval.store import RunStore, unit_key
from robusteval.store.stages import register_stage
from robusteval.text.thinking import (
    NO_THINKING,
    ReasoningFormat,
    ReasoningOptions,
    opens_thinking,
    read_output,
)

SOURCE_COMMAND = "attack matcha"
SOURCE_STAGE = "matcha_outcome"
GENERATION_STAGE = register_stage("transfer_generation", summary="black-box generations on transferred prompts")
OUTCOME_STAGE = register_stage("transfer_outcome", summary="transfer outcomes")
KINDS = ("original", "perturbed")
BUILTIN_SETS = ("math", "yesno")

#: (question, reference completion, candidate completion) -> {"reasoning_correct": bool|None, ...}
ReasoningJudgeFn = Callable[[list[tuple[str, str, str]]], list[dict[str, Any]]]


@dataclass(frozen=True)
class TransferItem:
    """One successful white-box perturbation to replay."""

    id: str
    clean_question: str
    perturbed_question: str
    gold: str
    source: dict[str, Any]  # the source outcome record, as stored


@dataclass(frozen=True)
class SourceRun:
    """What a transfer needs from a finished (or partly finished) MATCHA attack run."""

    run_dir: Path
    identity: dict[str, Any]
    exemplars: ExemplarSet
    exemplars_ref: str  # name (math, yesno) or path that load_exemplars accepts
    answer_type: str
    items: list[TransferItem]  # the successes to replay (the first ``limit`` of them)
    n_successes: int  # successes in the source run, before ``limit``
    n_outcomes: int  # outcome records in the source run (attacked or not)

    @property
    def prompt(self) -> AnswerFirstPrompt:
        """The source run's prompt, its exemplars written as its counting wrote them."""
        return AnswerFirstPrompt(self.exemplars, source_style(self.identity))

    @property
    def judge_spec(self) -> str:
        return str(self.identity.get("judge") or "arith")

    @property
    def max_new_tokens(self) -> int:
        return int((self.identity.get("config") or {}).get("max_new_tokens") or 256)

    @property
    def counting(self) -> str:
        """How the source run counted outcomes (``--count``): its judge rule and judge input are the transfer's."""
        return str((self.identity.get("config") or {}).get("counting") or "ours")

    @property
    def judge_retries(self) -> int:
        """The source run's re-asks of an unreadable LLM verdict (its ``--judge-retries``, else its counting's)."""
        from robusteval.attacks.matcha.config import AUTHORS_JUDGE_RETRIES

        stored = self.identity.get("judge_retries")
        if stored is not None:
            return int(stored)
        return AUTHORS_JUDGE_RETRIES if self.counting == "authors" else 0

    @property
    def retry_temperature(self) -> float | None:
        from robusteval.attacks.matcha.config import AUTHORS_RETRY_TEMPERATURE

        return AUTHORS_RETRY_TEMPERATURE if self.counting == "authors" else None

    @property
    def judge_prompt(self) -> str | None:
        """The source run's ``--judge-prompt`` file, if it had one (its judge asks it here too)."""
        stored = self.identity.get("judge_prompt")
        return None if stored is None else str(stored)

    @property
    def unreadable(self) -> str:
        """What the source run counted a verdict still unreadable as (``--unreadable-verdicts``)."""
        return str(self.identity.get("unreadable_verdicts") or "abstain")


def source_style(identity: dict[str, Any]) -> str:
    """The exemplar style of a source run (the authors' under --count authors)."""
    return exemplar_style((identity.get("config") or {}).get("counting"))


def resolve_exemplars(identity: dict[str, Any], override: str | None = None) -> tuple[ExemplarSet, str]:
    """The source run's exemplar set, checked against its stored prefix hash.

    The identity stores what ``load_exemplars`` takes (a built-in name or a path); older runs stored a display
    name, so the built-in sets are tried too, and the one whose prompt prefix hashes to the stored
    ``prefix_hash`` wins (a file that changed since the attack is refused). ``override`` (``--exemplars``)
    must match that hash as well.
    """
    stored_hash = identity.get("prefix_hash")
    named = str(identity.get("exemplars") or "")
    candidates = [override] if override else [c for c in (named, *BUILTIN_SETS) if c]
    tried = []
    for ref in dict.fromkeys(candidates):
        try:
            exemplars = load_exemplars(ref)
        except UserError:
            tried.append(ref)
            continue
        if stored_hash is None or unit_key(AnswerFirstPrompt(exemplars, source_style(identity)).prefix) == stored_hash:
            return exemplars, ref
        tried.append(ref)
    if override:
        raise UserError(
            f"exemplars {override}: not the exemplar set of the source run (its prompt prefix differs); "
            f"the source run used '{named}'"
        )
    raise UserError(
        f"cannot find the source run's exemplar set '{named}' (tried {', '.join(tried)}); pass the same "
        "file as exemplars (a path)"
    )


def infer_answer_type(identity: dict[str, Any], exemplars: ExemplarSet, records: list[dict[str, Any]]) -> str:
    """How answers of the source dataset are compared: as the attack run recorded it (its identity, or a
    record's own ``answer_type``), else the exemplar set's type, which is how the attack chose its exemplars."""
    if identity.get("answer_type"):
        return str(identity["answer_type"])
    for record in records:
        if record.get("answer_type"):
            return str(record["answer_type"])
    return exemplars.answer_type or "number"


def load_source(
    run_dir: str | Path, *, exemplars: str | None = None, answer_type: str | None = None, limit: int | None = None
) -> SourceRun:
    """Read the successes of a MATCHA attack run (outcome ``success``, in stored order, first ``limit``)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise UserError(f"source run {path}: no such directory")
    with RunStore.open_existing(path) as store:
        identity = store.identity
        command = identity.get("command")
        if command != SOURCE_COMMAND:
            raise UserError(f"source run {path}: not a MATCHA attack run (its command is {command!r}, "
                            f"expected '{SOURCE_COMMAND}')")
        records = store.records(SOURCE_STAGE)
    level = (identity.get("config") or {}).get("level")
    if level != "token":
        raise UserError(f"source run {path}: a {level}-level run; only token-level perturbations have a text "
                        "question that another model can be asked")
    exemplar_set, ref = resolve_exemplars(identity, exemplars)
    items = []
    for record in records:
        if record.get("outcome") != "success" or not record.get("perturbed_question"):
            continue
        items.append(TransferItem(str(record["id"]), str(record["clean_question"]),
                                  str(record["perturbed_question"]), str(record["gold"]), record))
    n_successes = len(items)
    if limit is not None:
        items = items[:limit]
    kind = answer_type or infer_answer_type(identity, exemplar_set, records)
    return SourceRun(path, identity, exemplar_set, ref, kind, items, n_successes, len(records))


class TransferRunner:
    """Replay a source run's successes on ``backend`` and judge them; every generation is a stored unit."""

    def __init__(
        self,
        backend: Backend,
        store: RunStore,
        source: SourceRun,
        *,
        reasoning_judge: ReasoningJudgeFn,
        temperature: float = 0.7,
        seed: int = 0,
        max_new_tokens: int | None = None,
        batch_size: int = 8,
        chat: bool = False,
        system_prompt: str | None = None,
        error_classifier: Judge | None = None,
        reasoning: ReasoningFormat = NO_THINKING,
    ):
        self.backend = backend
        # A thinking target (its chat template names think tags): answers and judged reasoning come from replies.
        self.reasoning = reasoning
        self.error_classifier = error_classifier
        self.chat = chat
        self.system_prompt = system_prompt
        self.store = store
        self.source = source
        self.prompt = source.prompt
        self.reasoning_judge = reasoning_judge
        self.temperature = temperature
        self.seed = seed
        self.max_new_tokens = max_new_tokens or source.max_new_tokens
        self.batch_size = batch_size

    def request(self, question: str) -> GenerationRequest:
        # Same request for the original and the perturbed question (same seed too), so the only difference
        # the target model sees is the perturbation. With chat, the exemplars are earlier turns.
        return self.prompt.request(question, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                   seed=self.seed, chat=self.chat, system_prompt=self.system_prompt)

    def generations(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Original and perturbed completions of every item, keyed by (example id, kind)."""
        units = [(item, kind) for item in self.source.items for kind in KINDS]

        def question(unit: tuple[TransferItem, str]) -> str:
            item, kind = unit
            return item.clean_question if kind == "original" else item.perturbed_question

        def key_of(unit: tuple[TransferItem, str]) -> str:
            item, kind = unit
            thinking = (self.reasoning.record(),) if self.reasoning.thinks else ()  # others keep their keys
            return unit_key(GENERATION_STAGE, backend_key(self.backend), item.id, kind,
                            self.request(question(unit)).key(), *thinking)

        def compute(batch: list[tuple[TransferItem, str]]) -> list[dict[str, Any]]:
            requests = [self.request(question(u)) for u in batch]
            outputs = self.backend.generate(requests)
            return [self._generation_record(item, kind, question((item, kind)), out,
                                            opens_thinking(self.backend, request.messages, self.reasoning))
                    for (item, kind), out, request in zip(batch, outputs, requests, strict=True)]

        records = run_units(self.store, GENERATION_STAGE, units, key_of, compute, id_of=lambda u: u[0].id,
                            batch_size=self.batch_size, description=f"transfer to {self.backend.name}")
        return {(item.id, kind): record for (item, kind), record in zip(units, records, strict=True)}

    def _generation_record(self, item: TransferItem, kind: str, question: str, out: Any, opened: bool = False
                           ) -> dict[str, Any]:
        # No grading against gold here: a generation unit holds only what the model said (and the answer read
        # from it), so its key need not include the gold answer; answers are compared in :meth:`outcomes`.
        thinking: dict[str, Any] = {}
        text = out.text
        if self.reasoning.thinks or "thinking" in out.meta:  # the answer from the reply; a trace never closed: none
            split, thinking = read_output(out.text, out.meta, self.reasoning, opened=opened)
            text = split.reply
        read = read_completion(text, self.source.answer_type)
        if thinking.get("thinking_truncated"):
            read["predicted"] = None
        return {
            "id": item.id,
            "kind": kind,
            "question": question,
            "model": self.backend.name,
            "temperature": self.temperature,
            "seed": self.seed,
            "completion": out.text,
            "finish_reason": out.finish_reason,
            "n_tokens": out.n_tokens,
            **thinking,
            **read,
        }

    def outcomes(self) -> list[dict[str, Any]]:
        """One record per item: both answers graded, and the perturbed reasoning judged where it counts.

        The judge is asked only where the target model answers the original question correctly and keeps
        that (gold) answer on the perturbed question: everywhere else the transfer outcome is decided without
        it (excluded, or answer flipped), and model judges cost money.
        """
        generated = self.generations()
        kind = self.source.answer_type
        rows = []
        for item in self.source.items:
            original, perturbed = generated[(item.id, "original")], generated[(item.id, "perturbed")]
            replies = {} if "reply" not in original else {"original_reply": original["reply"],
                                                          "perturbed_reply": perturbed.get("reply")}
            rows.append({
                **replies,
                "id": item.id,
                "clean_question": item.clean_question,
                "perturbed_question": item.perturbed_question,
                "gold": item.gold,
                "original_completion": original["completion"],
                "original_answer": original["predicted"],
                "original_correct": answers_match(original["predicted"], item.gold, kind),
                "perturbed_completion": perturbed["completion"],
                "perturbed_answer": perturbed["predicted"],
                # Kept = still the gold answer (the transferred questions are those answered correctly).
                "answer_kept": answers_match(perturbed["predicted"], item.gold, kind),
                "source_clean_answer": item.source.get("clean_answer"),
                "source_perturbed_answer": item.source.get("perturbed_answer"),
            })
        to_judge = [r for r in rows if r["original_correct"] and r["answer_kept"]]
        items = [(i.question, i.reference, i.candidate) for i in map(_judged_item, to_judge)]
        if self.source.counting == "authors":
            from robusteval.attacks.matcha.authors import authors_verdicts

            # The source run's judge input: the reasoning after the answer sentence (the original completion's,
            # as its clean one), an empty one wrong without asking (attacks/matcha/authors.py).
            verdicts = authors_verdicts(items, self.reasoning_judge) if items else []
        else:
            verdicts = self.reasoning_judge(items) if items else []
        by_id = {r["id"]: v for r, v in zip(to_judge, verdicts, strict=True)}
        out = []
        for row in rows:
            verdict = by_id.get(row["id"])
            correct = None if verdict is None else verdict.get("reasoning_correct")
            row = {**row, "reasoning": verdict, "reasoning_wrong": None if correct is None else not correct}
            row["outcome"] = transfer_outcome(row)
            out.append(row)
        attach_error_types(out, _judged_item, self.error_classifier)
        for row in out:
            self.store.put(OUTCOME_STAGE, unit_key(OUTCOME_STAGE, row["id"]), row, example_id=row["id"])
        return out

    def summary(self, rows: list[dict[str, Any]], judge_names: dict[str, str]) -> dict[str, Any]:
        """summary.json of ``rows`` (:meth:`outcomes`); the error types are those the rows' successes carry."""
        return {**transfer_summary(self.source, rows, model=self.backend.name, temperature=self.temperature,
                                   seed=self.seed, max_new_tokens=self.max_new_tokens, judges=judge_names),
                "error_types": success_error_types(rows)}


def success_error_types(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The distribution of the successes' ``error_type`` categories (a success without one is unclassified)."""
    return error_type_summary((r.get("error_type") or {}).get("category", UNCLASSIFIED)
                              for r in rows if r.get("outcome") == "success")


def transfer_summary(
    source: SourceRun,
    rows: list[dict[str, Any]],
    *,
    model: str | None,
    temperature: float,
    seed: int,
    max_new_tokens: int,
    judges: dict[str, str],
) -> dict[str, Any]:
    """summary.json of a transfer run: where the questions came from, who answered, and the transfer rate."""
    identity = source.identity
    config = identity.get("config") or {}
    return {
        "source_run": str(source.run_dir.resolve()),
        "source_model": model_label(identity.get("model")),
        "source_dataset": identity.get("dataset"),
        "source_level": config.get("level"),
        "source_variant": config.get("variant"),
        "source_target_answer": config.get("target_answer"),
        "source_judge": identity.get("judge"),
        # The source run's counting decides the judge rule and input, its re-asks and unreadable verdicts.
        "counting": source.counting,
        "judge_retries": source.judge_retries,
        "unreadable_verdicts": source.unreadable,
        "n_source_successes": source.n_successes,
        "model": model,
        "temperature": temperature,
        "seed": seed,
        "max_new_tokens": max_new_tokens,
        "exemplars": source.exemplars.name,
        "answer_type": source.answer_type,
        "judges": judges,
        **transfer_metrics(rows, source.counting),
    }


def model_label(model: Any) -> str | None:
    """A display name for a stored model identity (a dict since robusteval 0.2, a spec string before)."""
    if isinstance(model, dict):
        return str(model.get("source") or model.get("model") or model.get("name"))
    return None if model is None else str(model)


def _judged_item(row: dict[str, Any]) -> ReasoningItem:
    """The item the reasoning judge saw for a transferred question (:meth:`TransferRunner.outcomes`): the replies
    of a thinking target, else the completions."""
    return ReasoningItem(row["clean_question"], row.get("original_reply", row["original_completion"]),
                         row.get("perturbed_reply", row["perturbed_completion"]))


def transfer_outcome(row: dict[str, Any]) -> str:
    """``excluded`` (original answered wrongly), ``wrong`` (answer flipped), ``success``, ``unsuccessful`` or
    ``unjudged`` (the judge abstained: counted apart, never as a verdict)."""
    if not row["original_correct"]:
        return "excluded"
    if not row["answer_kept"]:
        return "wrong"
    wrong = row.get("reasoning_wrong")
    return "unjudged" if wrong is None else "success" if wrong else "unsuccessful"


# ------------------------------------------------------------------------------------------------ pipeline
def source_of(config: TransferConfig) -> SourceRun:
    """The source run ``config`` names, read (a bad source run fails here, before any model loads)."""
    config.validate()
    return load_source(config.source, exemplars=config.exemplars, answer_type=config.answer_type,
                       limit=config.limit)


def transfer_identity(config: TransferConfig, model: dict[str, Any] | None, source: SourceRun) -> dict[str, Any]:
    from robusteval.lifecycle import run_identity

    return run_identity(
        "transfer", config, model,
        source_identity=unit_key(source.identity), judge=config.judge or source.judge_spec, max_new_tokens=config.max_new_tokens or source.max_new_tokens,
        prefix_hash=unit_key(source.prompt.prefix), answer_type=source.answer_type,
    )


@public_entry
def transfer(config: TransferConfig, backend: Backend | None, store: RunStore | str | os.PathLike[str], *,
             load_judge: Callable[[str], Backend] | None = None, batch_size: int = 8) -> dict[str, Any]:
    """Ask ``backend`` the original and the perturbed question of every success of ``config.source``, judge the
    kept answers' reasoning, and return the summary with the transfer rate. ``backend`` may be None only when
    the source run has no successes (an empty summary is written)."""
    from robusteval.attacks.matcha.pipeline import error_classifier, matcha_judges
    from robusteval.lifecycle import finish, store_for
    from robusteval.models import load_backend

    source = source_of(config)
    judge_spec = config.judge or source.judge_spec
    max_new_tokens = config.max_new_tokens or source.max_new_tokens
    identity = transfer_identity(config, backend_identity(backend) if backend is not None else None, source)
    info = {"source_run": str(Path(config.source).resolve()), "limit": config.limit, "batch_size": batch_size}
    with store_for(store, identity, info) as run:
        if not source.items or backend is None:
            if source.items:
                raise UserError("transfer: a model backend is needed: the source run has successes to replay")
            summary = transfer_summary(source, [], model=None, temperature=config.generation.sampling_temperature(), seed=config.seed,
                                       max_new_tokens=max_new_tokens, judges={"reasoning": judge_spec})
            return finish(run, summary, seeds={"seed": config.seed})

        def load(spec: str) -> Backend:
            return backend if spec == backend.name else (load_judge or load_backend)(spec)

        judge_reasoning, _, names = matcha_judges(
            run, judge_spec, "none", load, chat=config.judge_chat, counting=source.counting,
            retries=source.judge_retries, retry_temperature=source.retry_temperature, unreadable=source.unreadable,
            reasoning_prompt=source.judge_prompt)
        judge_names = {"reasoning": names["reasoning"]}
        classifier = error_classifier(run, config.error_classifier, load, chat=config.judge_chat)
        if classifier is not None:
            judge_names["error_classifier"] = classifier.name
        runner = TransferRunner(backend, run, source, reasoning_judge=judge_reasoning,
                                temperature=config.generation.sampling_temperature(), seed=config.seed, max_new_tokens=max_new_tokens,
                                batch_size=batch_size, chat=config.chat, system_prompt=config.system_prompt,
                                error_classifier=classifier, reasoning=ReasoningOptions().resolve(backend))
        summary = runner.summary(runner.outcomes(), judge_names)
        return finish(run, summary, seeds={"seed": config.seed})
