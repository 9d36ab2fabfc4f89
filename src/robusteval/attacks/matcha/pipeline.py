"""The MATCHA pipeline: clean pass -> attack -> reasoning judge -> outcome records -> summary.

``attack_matcha(config, backend, store)`` is what ``robusteval attack matcha`` and the quick-start run, and
what a notebook calls. Stages in the store: ``matcha_clean``, ``matcha_attack``, the judges' cached verdicts
(``judge``, the error classifier's too) and ``matcha_outcome`` (one row per example, which ``transfer`` reads).
Every success (SR) row carries ``error_type`` (:mod:`robusteval.judges.errortypes`), the summary their
distribution (``error_types``).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from robusteval.analysis.drift import drift_summary
from robusteval.attacks.matcha.config import OVER_TOKEN_BUDGET, MatchaConfig, MatchaRunConfig
from robusteval.attacks.matcha.run import MatchaRunner
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.judges import (
    REASONING,
    SEMANTIC,
    Judge,
    ReasoningItem,
    SemanticItem,
    attach_error_types,
    build_error_classifier,
    build_judge,
    with_cache,
)
from robusteval.lifecycle import public_entry
from robusteval.metrics.matcha import matcha_metrics
from robusteval.models import Backend
from robusteval.models.identity import backend_identity
from robusteval.models.thinking import declared_format
from robusteval.prompts.answer_first import AnswerFirstPrompt, exemplar_source, exemplar_style, load_exemplars
from robusteval.store import RunStore, unit_key
from robusteval.store.stages import register_stage
from robusteval.text.thinking import ReasoningFormat, no_reply_summary, summary_format, truncation_summary

OUTCOME_STAGE = register_stage("matcha_outcome", summary="judged MATCHA outcomes")
COMMAND = "attack matcha"


class MatchaSummary(TypedDict, total=False):
    model: str
    dataset: str
    level: str
    variant: str
    target_answer: str
    judges: dict[str, str]
    hyperparameters: dict[str, Any]
    n: int
    n_correct: int
    acc: float | None
    n_attacked: int  # the UR/SR/WR headline denominator: every attacked example (docs/metrics.md)
    ur: float | None
    sr: float | None
    wr: float | None
    skip_reasons: dict[str, int]  # not attacked: reason -> count
    exclusions: dict[str, int]  # attacked, in a category of their own: {"unjudged": k, "clean_cot_wrong": k}
    among_judged: dict[str, Any]  # the secondary view: rates among the judged answers (n_judged)
    # Replies with nothing to read (text.thinking): clean ones (in n, wrong, not attacked) and perturbed ones.
    no_reply: dict[str, Any]
    perturbed_no_reply: dict[str, Any]
    thinking_truncated: dict[str, Any]
    perturbed_thinking_truncated: dict[str, Any]


def matcha_identity(config: MatchaRunConfig, model: dict[str, Any] | None, examples: Sequence[Example], *,
                    reasoning: ReasoningFormat | None = None) -> dict[str, Any]:
    """The run identity; a thinking target's adds its reasoning source and trace budget to ``config`` (a target
    without thinking keeps the identity it always had). ``reasoning``: the loaded target's format, else read from
    the model's local files (the command line decides the identity before the model loads)."""
    from robusteval.lifecycle import run_identity

    answer_type = examples[0].answer_type
    config.check(answer_type)  # refused here, before any model loads
    ref = exemplar_source(config.exemplars, answer_type)
    prompt = AnswerFirstPrompt(load_exemplars(ref), exemplar_style(config.resolved_counting()))
    fmt = reasoning if reasoning is not None else declared_format(config.thinking, model)
    hyper = {k: v for k, v in config.hyperparameters(thinks=target_thinks(fmt)).identity_record().items()
             if k != "target_answer"}
    # preset: recorded as "none" whatever the preset, as runs made before presets filled their values in did:
    # the identity holds the values a preset resolved to, so those runs resume (issue 38).
    return run_identity(COMMAND, config, model, exemplars=ref, answer_type=answer_type,
                        prefix_hash=unit_key(prompt.prefix), config={**hyper, "level": config.level}, preset="none")


NO_COT = "no chain of thought after the answer"


def target_thinks(fmt: ReasoningFormat) -> bool:
    """Whether MATCHA reads the target as thinking: think tags (harmony's channels are refused in one line)."""
    if fmt.kind == "harmony":
        raise UserError("MATCHA attacks think-tag traces; this model's chat template announces harmony channels "
                        "(gpt-oss), whose markers the attack's text spans do not hold: give --reasoning none to "
                        "read its generations whole")
    return fmt.kind == "think-tags"


def select_examples(config: MatchaRunConfig, examples: list[Example]) -> list[Example]:
    """The examples a run attacks: all of them, or a seeded random sample (``--sample``, the paper preset's 500
    StrategyQA questions), kept in file order."""
    if not examples:
        raise UserError(f"{config.data.data_file}: no examples to attack")
    size = config.sample_size()
    if size is None or size >= len(examples):
        return examples
    from robusteval.seeding import derive_random

    chosen = set(derive_random(config.seed, "matcha-sample", config.data.data_file).sample(range(len(examples)), size))
    return [ex for i, ex in enumerate(examples) if i in chosen]


def reasoning_spec_for(spec: str, counting: str) -> str:
    """The reasoning judge a counting uses: under ``authors`` the arithmetic check is OR-ed into the judge (their
    success rule: the LLM judge's 0 OR a false equation), so ``MODEL`` there means ``arith+MODEL``."""
    from robusteval.judges.base import spec_atoms

    if counting != "authors" or "arith" in spec_atoms(spec):
        return spec
    return f"arith+{spec}"


def matcha_judges(store: RunStore, reasoning_spec: str, semantic_spec: str, load: Callable[[str], Backend], *,
                  chat: bool = False, counting: str = "ours", retries: int = 0, reasoning_prompt: str | None = None,
                  semantic_prompt: str | None = None, retry_temperature: float | None = None,
                  unreadable: str | None = None, thinking_budget: int | None = None
                  ) -> tuple[Any, Any, dict[str, str]]:
    """Adapters from the judges package to the attack runner; every model verdict is cached in ``store``.
    ``chat`` asks LLM judges through their chat template (unset: as the judges always asked, see judges.llm).
    ``counting="authors"`` ORs ``arith`` into the reasoning judge and, without a prompt file, asks robusteval's
    reasoning-only prompt (the authors' judge sees no question); ``retries`` re-asks unreadable LLM verdicts (at
    ``retry_temperature``, None: the judge's own), and ``unreadable`` says what a reasoning verdict still unreadable
    becomes (None: an abstention; an unreadable semantic verdict always rejects); ``thinking_budget``: a thinking
    judge's trace budget (None: the judges' default)."""
    mode = True if chat else None
    authors = counting == "authors"
    reasoning = with_cache(build_judge(reasoning_spec_for(reasoning_spec, counting), load, task=REASONING, chat=mode,
                                       prompt_file=reasoning_prompt, retries=retries,
                                       prompt_name="reasoning_pair" if authors and not reasoning_prompt else None,
                                       retry_temperature=retry_temperature, unreadable=unreadable,
                                       thinking_budget=thinking_budget),
                           store)
    semantic = with_cache(build_judge(semantic_spec, load, task=SEMANTIC, chat=mode, prompt_file=semantic_prompt,
                                      retries=retries, retry_temperature=retry_temperature,
                                      thinking_budget=thinking_budget), store)

    def judge_reasoning(items: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
        verdicts = reasoning.judge([ReasoningItem(q, ref, cand) for q, ref, cand in items])
        return [{"reasoning_correct": v.label, **v.to_record()} for v in verdicts]

    def judge_semantic(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        verdicts = semantic.judge([SemanticItem(original, perturbed) for original, perturbed in pairs])
        # An unreadable semantic verdict rejects the replacement: meaning preservation is never assumed.
        # (An abstention rejects it too, and says so in the stored verdict.)
        return [{"same_meaning": v.decided(False), **v.to_record()} for v in verdicts]

    return judge_reasoning, judge_semantic, {"reasoning": reasoning.name, "semantic": semantic.name}


def rate_flags(reasoning_spec: str, semantic_spec: str) -> list[dict[str, str]]:
    """What the rates rest on that a reader must see next to them: a reasoning judge made of deterministic checkers
    only (they see numbers, not reasoning, and abstain without them), and an unguarded semantic gate."""
    from robusteval.attacks.matcha.config import OFFLINE_JUDGES
    from robusteval.judges.base import spec_atoms

    flags = []
    if all(atom in OFFLINE_JUDGES for atom in spec_atoms(reasoning_spec)):
        flags.append({"code": "deterministic_judge",
                      "text": f"reasoning judged by deterministic checkers only ({reasoning_spec})"})
    if semantic_spec.strip() == "none":
        flags.append({"code": "ungated", "text": "semantic gate: none (edits unchecked)"})
    return flags


def error_classifier(store: RunStore, spec: str | None, load: Callable[[str], Backend], *, chat: bool = False
                     ) -> Judge | None:
    """The optional LLM error-type classifier, its answers cached in ``store`` like every verdict."""
    if not spec:
        return None
    return with_cache(build_error_classifier(spec, load, chat=True if chat else None), store)


def _preflight(arguments: Mapping[str, Any]) -> None:
    config: MatchaRunConfig = arguments["config"]
    examples = arguments.get("examples")
    examples = list(examples) if examples is not None else config.data.load()
    if examples:
        config.check(examples[0].answer_type)  # what the data decides (a yes/no set needs an LLM judge)


@public_entry(preflight=_preflight)
def attack_matcha(
    config: MatchaRunConfig,
    backend: Backend,
    store: RunStore | str | os.PathLike[str],
    *,
    load_judge: Callable[[str], Backend] | None = None,
    batch_size: int = 8,
    examples: Sequence[Example] | None = None,
) -> MatchaSummary:
    """Run the MATCHA attack of ``config`` on the white-box ``backend``; returns the summary (also written to
    summary.json). ``load_judge(spec)`` builds judge models (default: ``load_backend`` with default options;
    a judge naming the attacked model reuses ``backend``). ``examples`` overrides ``config.data.load()``."""
    from robusteval.lifecycle import finish, store_for
    from robusteval.models import load_backend

    examples = select_examples(config, list(examples) if examples is not None else config.data.load())
    reasoning = config.thinking.resolve(backend)
    thinks = target_thinks(reasoning)
    identity = matcha_identity(config, backend_identity(backend), examples, reasoning=reasoning)
    prompt = AnswerFirstPrompt(load_exemplars(identity["exemplars"]), exemplar_style(config.resolved_counting()))
    shared: dict[str, Backend] = {}

    def load(spec: str) -> Backend:
        if spec in (getattr(backend, "name", None), str(getattr(backend, "spec", ""))):
            return backend
        if spec not in shared:
            shared[spec] = (load_judge or load_backend)(spec)
        return shared[spec]

    info = {"limit": config.data.limit, "batch_size": batch_size}
    with store_for(store, identity, info) as run:
        judge_reasoning, judge_semantic, judge_names = matcha_judges(
            run, config.judging.reasoning_spec(), config.judging.semantic_spec(), load, chat=config.judge_chat,
            counting=config.resolved_counting(), retries=config.resolved_judge_retries(),
            reasoning_prompt=config.judge_prompt, semantic_prompt=config.semantic_judge_prompt,
            retry_temperature=config.resolved_retry_temperature(), unreadable=config.resolved_unreadable(),
            thinking_budget=config.judge_max_thinking_tokens)
        judges = {"reasoning_judge": judge_reasoning, "semantic_judge": judge_semantic}
        classifier = error_classifier(run, config.error_classifier, load, chat=config.judge_chat)
        if classifier is not None:
            judge_names["error_classifier"] = classifier.name
        hyper = config.hyperparameters(thinks=thinks)
        options = {"batch_size": batch_size, "chat": config.chat, "system_prompt": config.system_prompt,
                   "reasoning": reasoning, "max_attack_tokens": config.max_attack_tokens, **judges}
        clean = MatchaRunner(backend, run, prompt, hyper, **options).clean_records(examples)
        notes = []
        if config.target_answer == "auto":
            n_correct = sum(1 for r in clean if r["correct"])
            if n_correct < config.min_correct:
                hyper = config.hyperparameters("clean", thinks=thinks)
                notes.append(f"the model answered {n_correct}/{len(clean)} correctly, fewer than "
                             f"{config.min_correct}, so the attack keeps the model's own clean answer "
                             "(target answer: clean) instead of the gold one")
        runner = MatchaRunner(backend, run, prompt, hyper, **options)
        chosen = [r for r in clean if runner.attackable(r)[0]]
        for record in clean:  # one line per example the budget leaves out (the summary counts them)
            if runner.attackable(record)[1] == OVER_TOKEN_BUDGET:
                runner.over_budget(record, say=True)
        if config.attack_limit is not None:
            chosen = chosen[: config.attack_limit]
        attacked = runner.judge(runner.attack_records(examples, chosen))
        summary = summarise_matcha(run, backend.name, config.data.dataset, hyper, judge_names, clean, attacked,
                                   runner, notes, error_classifier=classifier)
        summary["preset"] = config.preset
        summary["judge_retries"] = config.resolved_judge_retries()
        summary["unreadable_verdicts"] = config.resolved_unreadable()
        if config.resolved_counting() == "authors":  # how the authors' steps were taken (their code, or corrected)
            summary["judge_retry_temperature"] = config.resolved_retry_temperature()
            if hyper.replacement_gate is not None:
                summary["replacement_gate"] = hyper.replacement_gate
            if hyper.replacement_positions is not None:
                summary["replacement_positions"] = hyper.replacement_positions
        summary["flags"] = rate_flags(config.judging.reasoning_spec(), config.judging.semantic_spec())
        summary["deviations_from_paper"] = config.deviations(examples[0].answer_type)
        if thinks:
            summary.update(thinking_summary(reasoning, hyper, clean, attacked))
        elif config.reasoning_source is not None:
            summary.setdefault("notes", []).append("the target writes no thinking trace (its chat template names no "
                                                   "think tags): --reasoning-source has nothing to choose")
        return finish(run, summary, seeds={"seed": config.seed}, shape=MatchaSummary)


def summarise_matcha(
    store: RunStore,
    model_name: str,
    dataset: str,
    config: MatchaConfig,
    judge_names: dict[str, str],
    clean: list[dict[str, Any]],
    attacked: list[dict[str, Any]],
    runner: MatchaRunner,
    notes: Sequence[str] = (),
    *,
    error_classifier: Judge | None = None,
) -> dict[str, Any]:
    """Per-example outcome records (stage ``matcha_outcome``, successes with their error type) and the summary."""
    by_id = {r["id"]: r for r in attacked}
    rows = []
    for record in clean:
        result = by_id.get(record["id"])
        ok, reason = runner.attackable(record)
        row = {
            "id": record["id"],
            # ACC is always against the gold answer, whatever the attack target.
            "clean_correct": bool(record["correct"]),
            "attacked": result is not None and not result.get("skipped"),
            "skip_reason": None if ok else reason,
            **({"too_long": True} if record.get("too_long") else {}),  # not read: out of ACC's denominator
            **({k: v for k, v in result.items() if k != "attacked"} if result else {}),
        }
        if ok and result is None:
            row["skip_reason"] = "beyond the attack limit"
        elif result is not None and result.get("skipped"):
            row["skip_reason"] = result["skipped"]
        rows.append(row)
    error_types = attach_error_types(rows, _judged_item, error_classifier)
    for row in rows:
        store.put(OUTCOME_STAGE, unit_key(OUTCOME_STAGE, row["id"]), row, example_id=row["id"])
    summary: dict[str, Any] = {
        "model": model_name,
        "dataset": dataset,
        "level": config.level,
        "variant": config.variant,
        "target_answer": config.target_answer,
        "judges": judge_names,
        # A target without thinking: its hyper-parameters as they always were (no empty thinking fields).
        "hyperparameters": {k: v for k, v in config.record().items()
                            if v is not None or k not in ("reasoning_source", "max_thinking_tokens")},
        **matcha_metrics(rows, config.resolved_counting()),
        # Clean replies with nothing to read (empty, e.g. cut at the token limit): in ACC's n as wrong answers (the
        # model was asked, as eval counts them), never attacked (skip_reasons names them), counted here with their
        # interval; perturbed ones: the answer was not kept (a WR), counted apart.
        **no_reply_summary([r for r in clean if not r.get("too_long")]),
        **no_reply_summary([r for r in attacked if not r.get("skipped")], field="perturbed_no_answer",
                           name="perturbed_no_reply"),
        # Clean-correct examples whose completion has no reasoning after the answer: not attacked under ours;
        # attacked under the authors' counting (an empty reasoning is a success there when the answer is kept).
        "n_no_cot": sum(1 for r in rows if r["clean_correct"] and (r["skip_reason"] == NO_COT or r.get("no_cot"))),
        # Examples whose every insertion was refused (semantic judge or --max-drift): not attacked.
        "n_semantic_skipped": sum(1 for r in rows if r.get("skipped")),
        "drift": drift_summary([r for r in attacked if not r.get("skipped")], config.max_drift),
        # Which checkpoint decided each attacked example (--success-check): "insertion" or "final".
        "success_check": config.success_check,
        "decided_at": dict(Counter(r["decided_at"] for r in rows if r["attacked"] and r.get("decided_at"))),
        "error_types": error_types,
    }
    if notes:
        summary["notes"] = list(notes)
    if config.level == "embedding" and attacked:
        summary["max_abs_delta"] = max(r["max_abs_delta"] for r in attacked)
        summary["epsilon_mean"] = sum(r["epsilon"] for r in attacked) / len(attacked)
    return summary


def _judged_item(row: dict[str, Any]) -> ReasoningItem:
    """The item the reasoning judge saw for a row's perturbed response (``MatchaRunner.judge``; a thinking
    target's: its reasoning source)."""
    return ReasoningItem(row["clean_question"], row.get("clean_judged_text", row["clean_completion"]),
                         row.get("perturbed_judged_text", row["perturbed_completion"]))


def thinking_summary(reasoning: ReasoningFormat, config: MatchaConfig, clean: Sequence[dict[str, Any]],
                     attacked: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What a thinking target's summary adds: its format, the reasoning source, the trace budget, and how many
    traces were never closed (clean: not attacked, in ``skip_reasons``; perturbed: the answer was not kept)."""
    from robusteval.metrics.stats import proportion

    out: dict[str, Any] = {**summary_format(reasoning, clean), "reasoning_source": config.reasoning_source,
                           "max_thinking_tokens": config.thinking.max_thinking_tokens,
                           **truncation_summary([r for r in clean if not r.get("too_long")])}
    live = [r for r in attacked if not r.get("skipped")]
    if live:
        cut = sum(1 for r in live if r.get("perturbed_thinking_truncated"))
        out["perturbed_thinking_truncated"] = {"count": cut, **proportion(cut, len(live))}
    return out


def outcome_records(store: RunStore) -> list[dict[str, Any]]:
    """The stored per-example outcomes of a MATCHA run (what the summary, transfer and reports read)."""
    return store.records(OUTCOME_STAGE)

