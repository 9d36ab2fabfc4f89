"""Run a MATCHA attack over a dataset: clean pass, attack per example, reasoning judgement, summary.

Three stages, each a unit of work in the run store (so a killed run resumes where it stopped):
``matcha_clean`` (batched clean generation), ``matcha_attack`` (one perturbed example), and the judges' own
cached verdicts. Randomness is seeded per example from (seed, example id), so results do not depend on
order, batch size or resumption. Prompts are laid out by :mod:`.layout` from one tokenisation of the whole
prompt (or of the rendered chat conversation), so the ids the attack edits are the ids the model reads.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from robusteval.attacks.matcha.admission import AttackAdmission, prompt_sizes
from robusteval.attacks.matcha.authors import (
    authors_first_slot,
    gate_view,
    vocabulary_ids,
)
from robusteval.attacks.matcha.config import DEFAULT_ATTACK_TOKENS, MatchaConfig
from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack_steps
from robusteval.attacks.matcha.judging import MatchaJudging, ReasoningJudgeFn
from robusteval.attacks.matcha.layout import PromptLayout, authors_pgd_layout, chat_layout, layout_from_text
from robusteval.attacks.matcha.lockstep import Gate, expected_rounds, run_lockstep
from robusteval.attacks.matcha.objective import MatchaObjective, Reference, ordinary_token_ids, prepare
from robusteval.attacks.matcha.thinking import (
    continuation_spans,
    judged_text,
    prompt_opens,
)
from robusteval.attacks.matcha.token import TokenAttackConfig, edit_spans, token_attack_steps, word_boundaries
from robusteval.data.answers import answers_match
from robusteval.data.answers.completion import grade_completion, read_completion
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.models import WHITEBOX, Backend, WhiteBoxBackend, require
from robusteval.models.context import PROMPT_TOO_LONG
from robusteval.models.identity import backend_key
from robusteval.models.memory_plan import planned_rows
from robusteval.progress import set_phase
from robusteval.prompts.answer_first import STOP_STRINGS, AnswerFirstPrompt
from robusteval.runner import run_units
from robusteval.seeding import derive_rng, derive_seed
from robusteval.store import RunStore, unit_key
from robusteval.store.stages import register_stage
from robusteval.text.thinking import (
    NO_THINKING,
    ReasoningFormat,
    Split,
    no_answer_reason,
    read_reply,
    split_generation,
)

CLEAN_STAGE = register_stage("matcha_clean", summary="clean generations, graded")
ATTACK_STAGE = register_stage("matcha_attack", summary="one attacked example")

#: [(original question, perturbed question), ...] -> [{"same_meaning": bool, ...}, ...], in order
SemanticJudgeFn = Callable[[list[tuple[str, str]]], list[dict[str, Any]]]


def answer_token_count(backend, continuation_ids: Sequence[int], answer_sentence: str) -> int:  # type: ignore[no-untyped-def]
    """How many leading continuation tokens it takes to spell the answer sentence."""
    target = answer_sentence.strip()
    if not target:
        return 0
    for k in range(1, len(continuation_ids) + 1):
        if target in backend.decode(continuation_ids[:k]):
            return k
    return len(continuation_ids)


@dataclass(frozen=True)
class Generated:
    """A completion generated during the attack (at the insertion checkpoint) that is already the final one."""

    row: Any


class MatchaRunner(AttackAdmission, MatchaJudging):
    #: Candidate losses per forward (None: all at once); the benchmark's naive baseline sets 1.
    candidate_chunk: int | None = None

    def __init__(
        self,
        backend: Backend,
        store: RunStore,
        prompt: AnswerFirstPrompt,
        config: MatchaConfig,
        *,
        reasoning_judge: ReasoningJudgeFn,
        semantic_judge: SemanticJudgeFn,
        batch_size: int = 8,
        chat: bool = False,
        system_prompt: str | None = None,
        reasoning: ReasoningFormat = NO_THINKING,
        max_attack_tokens: int | None = None,
    ):
        self.backend: WhiteBoxBackend = require(backend, WHITEBOX, "the MATCHA attack")
        config.validate()
        self.store = store
        self.prompt = prompt
        self.config = config
        self.reasoning_judge = reasoning_judge
        self.semantic_judge = semantic_judge
        self.batch_size = batch_size
        self.backend_key = backend_key(backend)
        self.chat = chat
        self.system_prompt = system_prompt
        # A thinking target (attacks/matcha/thinking.py) when the config resolved a reasoning source for it.
        self.reasoning = reasoning if config.reasoning_source is not None else NO_THINKING
        # The per-step cost budget (0: none): see MatchaRunConfig.max_attack_tokens.
        self.max_attack_tokens = DEFAULT_ATTACK_TOKENS if max_attack_tokens is None else max_attack_tokens
        self._layouts: dict[str, PromptLayout] = {}
        self._allowed: torch.Tensor | None = None
        self._drift_meter: Any = None
        self.hyper = config.identity_record()

    # ------------------------------------------------------------------ prompts
    def layout(self, question: str) -> PromptLayout:
        """[prefix | head | question | tail] ids of the prompt for ``question`` (memoised per question)."""
        text = question.strip()
        found = self._layouts.get(text)
        if found is None:
            if self.chat:
                found = chat_layout(self.backend, self.prompt.messages(text, self.system_prompt), text)
            else:
                prefix, head, body, tail = self.prompt.segments(text)
                found = layout_from_text(self.backend, prefix, head, body, tail)
            if len(self._layouts) < 100_000:
                self._layouts[text] = found
        return found

    def edited_layout(self, layout: PromptLayout) -> PromptLayout:
        """The layout the attack edits: the question alone, or (authors' insertions) question + trigger."""
        if not self.authors_insertion:
            return layout
        return PromptLayout(layout.prefix, layout.head, [*layout.question, *layout.tail], [])

    @property
    def replacement_gate(self) -> str:
        """How a replacement is gated (token.TokenAttackConfig): ours against the original question; under the
        authors' insertions their gate unless the config says corrected."""
        if not self.authors_insertion:
            return "original"
        return self.config.replacement_gate or "authors"

    @property
    def replacement_positions(self) -> str:
        """Which inserted positions a step replaces (token.TokenAttackConfig): ours ("corrected"); under the
        authors' insertions their gather by position unless the config says corrected."""
        if not self.authors_insertion:
            return "corrected"
        return self.config.replacement_positions or "authors"

    def authors_pgd_layout(self, example: Example) -> PromptLayout:
        """The layout the authors' embedding attack edits (--count authors): question + answer trigger, from the
        end of their tokenisation of the exemplars and ``Q: `` (:func:`.layout.authors_pgd_layout`)."""
        prefix, head, _, _ = self.prompt.segments(example.question)
        return authors_pgd_layout(self.backend, self.layout(example.question), prefix, head)

    def _decode(self, rows: Sequence[tuple[list[int], Any]]) -> list[Any]:
        """Greedy completions (cut at the stop strings) of (prefix ids, suffix ids or embeddings [L, H]) rows;
        rows sharing a prefix are decoded together after its cached KV, a thinking target's in as many rows at a
        time as its KV cache (prompt + trace + reply) leaves room for (:mod:`robusteval.models.memory_plan`)."""
        out: list[Any] = [None] * len(rows)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, (prefix, _) in enumerate(rows):
            groups.setdefault(tuple(prefix), []).append(i)
        for shared, indices in groups.items():
            step = len(indices)
            if self.thinks:
                longest = len(shared) + max(len(rows[i][1]) for i in indices)
                step = planned_rows(self.backend, longest, self.generation_budget) or step
            for start in range(0, len(indices), step):
                part = indices[start: start + step]
                decoded = self.backend.decode_many(list(shared), [rows[i][1] for i in part],
                                                   max_new_tokens=self.generation_budget,
                                                   stops=[STOP_STRINGS] * len(part))
                for i, row in zip(part, decoded, strict=True):
                    out[i] = row
        return out

    # ------------------------------------------------------------------ a thinking target's reply and reasoning
    def opens(self, question: str) -> bool:
        """Whether the prompt of ``question`` opens the trace (R1-distill's chat prompt)."""
        return self.thinks and prompt_opens(self.backend.decode, self.layout(question).tail, self.reasoning)

    def read(self, text: str, example: Example) -> tuple[dict[str, Any], Split | None]:
        """The answer, answer sentence and CoT of a completion: of its reply for a thinking target (none when the
        trace was never closed), with the split; of the whole text otherwise (the split None)."""
        if not self.thinks:
            return read_completion(text, example.answer_type), None
        split = split_generation(text, self.reasoning, opened=self.opens(example.question))
        read = read_completion(split.reply, example.answer_type)
        if split.truncated:
            read["predicted"] = None
        return read, split

    def judged(self, text: str, split: Split | None) -> str:
        """What the reasoning judge reads of a completion: all of it, or a thinking target's --reasoning-source."""
        return text if split is None else judged_text(split, self.config.reasoning_source or "chain")

    # ------------------------------------------------------------------ clean pass
    def question_ids(self, question: str) -> list[int]:
        return list(self.layout(question).question)

    def clean_records(self, examples: Sequence[Example]) -> list[dict[str, Any]]:
        def key_of(ex: Example) -> str:
            # A thinking target's budget and format key its answers; any other keeps the key it always had.
            thinking = (self.reasoning.record(), self.config.thinking.max_thinking_tokens) if self.thinks else ()
            return unit_key(CLEAN_STAGE, self.backend_key, ex.id, ex.question, self.prompt.prefix,
                            self.config.max_new_tokens, self.chat, self.system_prompt, *thinking)

        def compute(batch: list[Example]) -> list[dict[str, Any]]:
            layouts = [self.layout(ex.question) for ex in batch]
            # Too long to read: skipped with one line (and counted in skip_reasons), never decoded.
            fits = [self._overflow(ex.id, len(lay.ids), len(lay.question), say=True) is None
                    for ex, lay in zip(batch, layouts, strict=True)]
            todo = [i for i, ok in enumerate(fits) if ok]
            rows = dict(zip(todo, self._decode([(layouts[i].prefix, layouts[i].head + layouts[i].question
                                                 + layouts[i].tail) for i in todo]), strict=True))
            return [self._graded(ex, lay, rows[i]) if fits[i] else self._too_long(ex, lay)
                    for i, (ex, lay) in enumerate(zip(batch, layouts, strict=True))]

        return run_units(self.store, CLEAN_STAGE, examples, key_of, compute, id_of=lambda e: e.id,
                         batch_size=self.batch_size, description="clean pass")

    def _graded(self, ex: Example, layout: PromptLayout, row) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        # Keep exactly the generated tokens up to the stop string: they are teacher-forced later.
        continuation = list(row.token_ids)
        while continuation and not row.text.startswith(self.backend.decode(continuation)):
            continuation.pop()  # drop the tokens that spelled the stop string
        if self.thinks:
            return self._graded_thinking(ex, layout, row, continuation)
        # An empty reply (cut at the token limit, or stopped at once) has no answer: ``no_answer`` says why, and
        # it is a counted skip (``skip_reasons``, ``no_reply``), never attacked.
        _, kept = read_reply(row.text, None, row.finish_reason, self.reasoning)
        graded = grade_completion(ex, row.text)  # always against gold
        return {
            "id": ex.id,
            "question": ex.question,
            "question_ids": layout.question,
            "head_ids": layout.head,
            "tail_ids": layout.tail,
            "prefix_length": len(layout.prefix),
            "gold": ex.answer,
            "completion": row.text,
            "finish_reason": row.finish_reason,
            "continuation_ids": continuation,
            "n_answer_tokens": answer_token_count(self.backend, continuation, graded["answer_sentence"]),
            **graded,
            **kept,
        }

    def _graded_thinking(self, ex: Example, layout: PromptLayout, row, continuation: list[int]  # type: ignore[no-untyped-def]
                         ) -> dict[str, Any]:
        """A thinking target's clean record: graded on its reply, with where its trace, reply and answer lie in
        the continuation; a trace never closed, or an empty reply after it, has no answer (``no_answer``) and is
        never attacked."""
        opened = prompt_opens(self.backend.decode, layout.tail, self.reasoning)
        split, kept = read_reply(row.text, None, row.finish_reason, self.reasoning, opened=opened)
        graded = grade_completion(ex, split.reply)  # always against gold
        record = {"id": ex.id, "question": ex.question, "question_ids": layout.question, "head_ids": layout.head,
                  "tail_ids": layout.tail, "prefix_length": len(layout.prefix), "gold": ex.answer,
                  "completion": row.text, "finish_reason": row.finish_reason, "continuation_ids": continuation,
                  **graded, **kept}
        if split.truncated:
            return {**record, "predicted": None, "correct": False, "n_answer_tokens": 0}
        if "no_answer" in kept:
            record.update({"predicted": None, "correct": False})
        if split.thinking is None:  # no trace written: read as a model without thinking
            return {**record, "n_answer_tokens": answer_token_count(self.backend, continuation,
                                                                    graded["answer_sentence"])}
        spans = continuation_spans(self.backend.decode, continuation, self.reasoning, opened,
                                   graded["answer_sentence"])
        return {**record, **spans.record(), "n_answer_tokens": spans.n_answer}

    # ------------------------------------------------------------------ attack
    @property
    def allowed_tokens(self) -> torch.Tensor:
        if self._allowed is None:
            tokenizer = self.backend.tokenizer
            # The authors draw insertions (and take replacements) from the whole vocabulary; ours plain words.
            ids = vocabulary_ids(tokenizer) if self.authors_insertion else ordinary_token_ids(tokenizer)
            self._allowed = ids.to(self.backend.device)
        return self._allowed

    @property
    def drift_meter(self) -> Any:
        """The text-drift measure of the run identity, on the attacked model's device (built once)."""
        if self._drift_meter is None:
            from robusteval.analysis.drift import DriftMeter

            self._drift_meter = DriftMeter(self.config.drift_measure or "auto", device=self.backend.device)
        return self._drift_meter

    def attack_records(self, examples: Sequence[Example], clean: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        by_id = {ex.id: ex for ex in examples}
        todo = []
        for record in clean:
            ok, reason = self.attackable(record)
            if ok:
                todo.append(record)
            elif reason == PROMPT_TOO_LONG and not record.get("too_long"):  # the clean pass said the others
                self._overflow(record["id"], *prompt_sizes(record), attack=True, say=True)

        def key_of(record: dict[str, Any]) -> str:
            return unit_key(ATTACK_STAGE, self.backend_key, record["id"], record["completion"], self.hyper)

        def compute(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return self.attack_many([by_id[record["id"]] for record in batch], batch)

        return run_units(self.store, ATTACK_STAGE, todo, key_of, compute, id_of=lambda r: r["id"],
                         batch_size=self.batch_size, description=f"MATCHA {self.config.level}/{self.config.variant}")

    def attack_one(self, example: Example, clean: dict[str, Any]) -> dict[str, Any]:
        return self.attack_many([example], [clean])[0]

    def attack_many(self, examples: Sequence[Example], cleans: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Attack ``examples`` together, in lock-step (:mod:`.lockstep`): one record per example, each what the
        example would get attacked alone. ``seconds`` holds each example's share of the batch's phases."""
        cfg = self.config
        began = time.perf_counter()
        layouts, objectives, records = [], [], []
        for example, clean in zip(examples, cleans, strict=True):
            layout = self.layout(example.question)
            if layout.question != list(clean["question_ids"]):
                raise UserError(f"{example.id}: the question tokenises differently than in the stored clean pass "
                                "(was the tokenizer changed?); start a new run directory")
            layout = self.edited_layout(layout) if cfg.pgd_span == "question" else self.authors_pgd_layout(example)
            reference = Reference(list(layout.question), clean["continuation_ids"], clean["n_answer_tokens"])
            if self.thinks and "thinking" in clean:
                spans = self.spans(clean)
                reference = Reference(reference.question_ids, reference.continuation_ids, spans.n_answer,
                                      spans.reply_start, spans.cot_spans(cfg.reasoning_source or "chain"))
            objective = MatchaObjective(self.backend, layout.prefix, layout.head, layout.tail, reference,
                                        lam=0.0 if cfg.variant == "cot-loss-only" else None,
                                        candidate_chunk=self.candidate_chunk, answer_loss=cfg.choice("answer_loss"))
            layouts.append(layout)
            objectives.append(objective)
            records.append({
                "id": example.id,
                "level": cfg.level,
                "variant": cfg.variant,
                "clean_question": example.question,
                "clean_completion": clean["completion"],
                "clean_answer": clean["predicted"],
                "gold": example.answer,
                "gold_reasoning": _gold_reasoning(example),
                "target": example.answer if cfg.target_answer == "gold" else clean["predicted"],
                "lambda": objective.lam,
                "n3": objective.n3,
                "n4": objective.n4,
                "question_span": [len(layout.prefix) + len(layout.head),
                                  len(layout.prefix) + len(layout.head) + len(layout.question)],
            })
            if self.thinks and "thinking" in clean:
                clean_split = Split(clean["thinking"], clean["reply"])
                records[-1].update({"reasoning_source": cfg.reasoning_source, "clean_thinking": clean["thinking"],
                                    "clean_reply": clean["reply"],
                                    "clean_judged_text": judged_text(clean_split, cfg.reasoning_source or "chain")})
        prepare(objectives)
        timings = {"reference": time.perf_counter() - began}
        began = time.perf_counter()
        if cfg.level == "token":
            suffixes = self._token_attacks(examples, cleans, layouts, objectives, records)
        else:
            suffixes = self._embedding_attacks(layouts, objectives, records)
        timings["optimise"] = time.perf_counter() - began
        began = time.perf_counter()
        live = [i for i, suffix in enumerate(suffixes) if suffix is not None]
        todo = [i for i in live if not isinstance(suffixes[i], Generated)]
        set_phase(f"generating {len(todo)} perturbed completion(s)")
        rows = dict(zip(todo, self._decode([(layouts[i].prefix, suffixes[i]) for i in todo]), strict=True))
        rows.update({i: suffixes[i].row for i in live if isinstance(suffixes[i], Generated)})
        timings["generate"] = time.perf_counter() - began
        share = {name: seconds / len(examples) for name, seconds in timings.items()}
        for i in live:
            row = rows[i]
            read, split = self.read(row.text, examples[i])
            reason = no_answer_reason(split or Split(None, row.text), row.finish_reason)
            if reason is not None:  # no reply to read: the answer was not kept, and the summary counts why
                records[i]["perturbed_no_answer"] = reason
            records[i].update({
                "perturbed_completion": row.text,
                "perturbed_answer": read["predicted"],
                "perturbed_cot": read["cot"],
                "answer_kept": answers_match(read["predicted"], records[i]["target"], examples[i].answer_type),
            })
            if split is not None:  # a trace never closed has no answer: the answer was not kept
                records[i].update({"perturbed_thinking": split.thinking, "perturbed_reply": split.reply,
                                   "perturbed_thinking_truncated": split.truncated,
                                   "perturbed_judged_text": self.judged(row.text, split)})
        for record in records:
            record["seconds"] = {**share, "batch": len(examples)}
        return records

    def _token_attacks(self, examples: Sequence[Example], cleans: Sequence[dict[str, Any]],
                       layouts: Sequence[PromptLayout], objectives: Sequence[MatchaObjective],
                       records: list[dict[str, Any]]) -> list[Any]:
        """Token attacks of a batch; fills ``records``; returns each example's suffix ids to generate from, or its
        completion when the insertion checkpoint generated it already (None for an example whose every insertion
        was refused: it is skipped)."""
        cfg = self.config
        meter = self.drift_meter
        # Drift against the question as the model reads it, so tokenizer round-trip artefacts do not count.
        originals = [self.backend.decode(list(layout.question)).strip() for layout in layouts]
        verdicts: list[list[dict[str, Any]]] = [[] for _ in examples]  # each example's semantic verdicts
        generated: dict[tuple[int, tuple[int, ...]], Any] = {}  # the insertion checkpoints' completions
        checkpoints: dict[int, str] = {}  # what the judge read of each example's insertion-checkpoint completion

        # What the gate reads of a span: all of it, or (the authors' insertions) all but its last two tokens, as
        # theirs decodes it (IRD 509, 521, 612).
        view = gate_view if self.authors_insertion else list

        def gate(asked: list[tuple[int, Gate]]) -> list[tuple[bool, dict[str, Any]]]:
            texts = [self.backend.decode(view(g.ids)).strip() for _, g in asked]
            # What each edit is compared with: the original question, or (the authors' insertions) the span as it
            # was before this token or this step (their replacement gate: see --replacement-gate).
            befores = [examples[i].question if g.against is None else self.backend.decode(view(g.against)).strip()
                       for i, g in asked]
            drifts: list[float | None] = [None] * len(asked)
            if cfg.max_drift is not None:
                drifts = list(meter.drifts([originals[i] for i, _ in asked], texts))
            out: list[tuple[bool, dict[str, Any]]] = [(False, {})] * len(asked)
            judged = []
            for k, drift in enumerate(drifts):
                if drift is not None and cfg.max_drift is not None and drift > cfg.max_drift:
                    # Refused before the (costly) semantic judge is asked.
                    out[k] = (False, {"same_meaning": False, "rejected_by": "max_drift", "drift": drift,
                                      "max_drift": cfg.max_drift, "drift_measure": meter.kind})
                else:
                    judged.append(k)
            answers = self.semantic_judge([(befores[k], texts[k]) for k in judged]) if judged else []
            for k, verdict in zip(judged, answers, strict=True):
                verdicts[asked[k][0]].append(verdict)
                out[k] = (bool(verdict["same_meaning"]),
                          verdict if drifts[k] is None else {**verdict, "drift": drifts[k]})
            return out

        def check(asked: list[tuple[int, list[int]]]) -> list[str | None]:
            """The insertion checkpoint: generate from each question, then "wrong" where the answer changed,
            "success" where it was kept and the reasoning judge finds the reasoning wrong, else None."""
            rows = self._decode([(layouts[i].prefix, layouts[i].head + ids + layouts[i].tail) for i, ids in asked])
            out: list[str | None] = []
            kept = []
            for (i, ids), row in zip(asked, rows, strict=True):
                generated[(i, tuple(ids))] = row
                read, split = self.read(row.text, examples[i])
                if answers_match(read["predicted"], records[i]["target"], examples[i].answer_type):
                    kept.append((len(out), i, self.judged(row.text, split)))
                    out.append(None)
                else:
                    out.append("wrong")
            verdicts = self.perturbed_verdicts([(examples[i].question, records[i].get("clean_judged_text",
                                                                                      cleans[i]["completion"]), text)
                                                for _, i, text in kept]) if kept else []
            for (k, _, _), verdict in zip(kept, verdicts, strict=True):
                # An abstention decides nothing here: the attack goes on, and the final judgement counts it apart
                # if the judge abstains there too.
                out[k] = "success" if verdict.get("reasoning_correct") is False else None
            for (i, _), row in zip(asked, rows, strict=True):  # what the final check cuts the reasoning after
                checkpoints[i] = self.judged(row.text, self.read(row.text, examples[i])[1])
            return out

        steps = []
        for example, clean, objective, layout in zip(examples, cleans, objectives, layouts, strict=True):
            authors = self.authors_insertion
            attack_config = TokenAttackConfig(cfg.variant, cfg.real("insert_ratio"), cfg.real("topk_ratio"),
                                              cfg.count("steps"), cfg.count("n_candidates"), cfg.count("max_redraws"),
                                              cfg.choice("success_check"),
                                              insertion="authors" if authors else "words",
                                              trigger_tokens=len(clean["tail_ids"]) if authors else 0,
                                              first_slot=authors_first_slot(self.backend, self.prompt, layout)
                                              if authors else 0, replacement_gate=self.replacement_gate,
                                              replacement_positions=self.replacement_positions)
            slots = None if self.authors_insertion else word_boundaries(self.backend.decode, clean["question_ids"])
            steps.append(token_attack_steps(objective, list(layout.question), self.allowed_tokens, attack_config,
                                            derive_rng(cfg.seed, "matcha-token", example.id), slots=slots))
        # The progress shown counts lock-step rounds against the longest attack's (its top-k gates per step).
        topk = max(math.ceil(cfg.real("topk_ratio") * max(1, round(cfg.real("insert_ratio") * len(layout.question))))
                   for layout in layouts)
        results = run_lockstep(objectives, steps, gate, check, expected_rounds=expected_rounds(
            cfg.count("steps"), topk, checkpoint=cfg.success_check == "insertion-and-final"))
        suffixes: list[Any] = [None] * len(examples)
        perturbed = {}
        for i, (result, record) in enumerate(zip(results, records, strict=True)):
            record["insertions"] = result.insertions
            record["decided_at"] = result.decided_at
            drifted = sum(1 for d in result.insertions if (d.get("semantic") or {}).get("rejected_by") == "max_drift")
            record["drift_rejections"] = drifted + sum(
                1 for step in result.steps for p in step.get("proposals", ())
                if (p.get("semantic") or {}).get("rejected_by") == "max_drift")
            record["semantic_verdicts"] = len(verdicts[i])
            if result.skipped is not None:
                record.update({"skipped": _skip_reason(result.skipped, len(result.insertions), drifted, cfg),
                               "drift": None})
                continue
            perturbed[i] = self.backend.decode(result.question_ids).strip()
            question_text = perturbed[i]
            if self.authors_insertion:  # the edited span ends with the answer trigger: the question is before it
                trigger = self.backend.decode(list(cleans[i]["tail_ids"])).strip()
                if trigger and question_text.endswith(trigger):
                    question_text = question_text[: -len(trigger)].rstrip()
                record["perturbed_span"] = perturbed[i]
            record.update({
                "perturbed_question": question_text,
                "perturbed_question_ids": result.question_ids,
                "inserted_positions": result.inserted_positions,
                "replaced_positions": result.replaced_positions,
                "edits": [e for e in edit_spans(self.backend.decode, result.question_ids, result.inserted_positions,
                                                result.replaced_positions) if e["end"] <= len(question_text)],
                "perturbed_question_span": [record["question_span"][0],
                                            record["question_span"][0] + len(result.question_ids)],
                "steps": result.steps,
            })
            if result.decided_at == "final" and i in checkpoints and self.config.counting == "authors":
                # Their final check cuts the reasoning after the checkpoint completion's answer sentence.
                record["checkpoint_judged_text"] = checkpoints[i]
            # Decided at the insertion checkpoint: its generation is the final one (greedy, the same ids).
            row = generated.get((i, tuple(result.question_ids)))
            suffixes[i] = Generated(row) if row is not None else layouts[i].head + result.question_ids + layouts[i].tail
        if perturbed:
            measured = meter.measure([originals[i] for i in perturbed], list(perturbed.values()))
            for i, drift in zip(perturbed, measured, strict=True):
                records[i]["drift"] = drift
        return suffixes

    def _embedding_attacks(self, layouts: Sequence[PromptLayout], objectives: Sequence[MatchaObjective],
                           records: list[dict[str, Any]]) -> list[Any]:
        """Embedding attacks of a batch; fills ``records``; returns each example's input embeddings [L, H]."""
        cfg = self.config
        attack_config = EmbeddingAttackConfig(cfg.real("epsilon"), cfg.real("step_fraction"), cfg.count("steps"),
                                              bool(cfg.random_start), cfg.choice("eps_base"))
        steps = [embedding_attack_steps(objective, attack_config,
                                        seed=derive_seed(cfg.seed, "matcha-embedding", record["id"]))
                 for objective, record in zip(objectives, records, strict=True)]
        suffixes = []
        for layout, objective, result, record in zip(layouts, objectives, run_lockstep(objectives, steps), records,
                                                     strict=True):
            record.update({
                "perturbed_question": None,  # an embedding perturbation has no text
                "drift": None,  # so no text drift either
                "epsilon": result.epsilon,
                "eps_fraction": cfg.epsilon,
                "max_abs_delta": result.max_abs_delta,
                # What moved, as token positions of the prompt (record["question_span"] names the same): the
                # question, or (the authors') question + trigger; and where PGD started.
                "pgd_span": cfg.pgd_span,
                "pgd_start": "random" if cfg.random_start else "clean",
                "steps": result.steps,
                "semantic_verdicts": 0,
                "decided_at": "final",
            })
            with torch.no_grad():
                suffixes.append(torch.cat([objective.head, result.question_embeds,
                                           self.backend.embed(torch.tensor(layout.tail, dtype=torch.long,
                                                                           device=self.backend.device))]))
        return suffixes


def _skip_reason(reason: str, n_draws: int, n_drifted: int, cfg: MatchaConfig) -> str:
    """The token attack's skip reason, saying how many draws ``--max-drift`` refused (it names only the judge)."""
    if not n_drifted:
        return reason
    bound = f"--max-drift {cfg.max_drift} ({cfg.drift_measure} measure)"
    if n_drifted == n_draws:
        return f"all {n_draws} random insertions drifted beyond {bound}"
    return (f"all {n_draws} random insertions were rejected: {n_drifted} drifted beyond {bound}, "
            f"{n_draws - n_drifted} by the semantic judge")


def _gold_reasoning(example: Example) -> str | None:
    """The dataset's own worked solution (GSM8K ``solution``, StrategyQA's explanation), the reference against
    which an LLM judge checks the clean reasoning."""
    for key in ("solution", "target"):
        value = example.meta.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None

