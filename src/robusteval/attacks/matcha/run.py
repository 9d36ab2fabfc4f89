"""Run a MATCHA attack over a dataset: clean pass, attack per example, reasoning judgement, summary.

Three stages, each a unit of work in the run store (so a killed run resumes where it stopped):
``matcha_clean`` (batched clean generation), ``matcha_attack`` (one perturbed example), and the judges' own
cached verdicts. Randomness is seeded per example from (seed, example id), so results do not depend on
order, batch size or resumption.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import torch

from robusteval.attacks.matcha.config import MatchaConfig
from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig, embedding_attack
from robusteval.attacks.matcha.objective import MatchaObjective, Reference, ordinary_token_ids
from robusteval.attacks.matcha.token import TokenAttackConfig, edit_spans, token_attack
from robusteval.data.answers import answers_match
from robusteval.data.example import Example
from robusteval.evals.answer_first import grade_completion, read_completion
from robusteval.metrics.matcha import outcome
from robusteval.models import WHITEBOX, Backend, WhiteBoxBackend, require
from robusteval.models.identity import backend_key
from robusteval.prompts.answer_first import STOP_STRINGS, AnswerFirstPrompt
from robusteval.runner import run_units
from robusteval.seeding import derive_rng, derive_seed
from robusteval.store import RunStore, unit_key

#: (question, reference completion, perturbed completion) -> {"reasoning_correct": bool|None, ...}
ReasoningJudgeFn = Callable[[list[tuple[str, str, str]]], list[dict[str, Any]]]
#: (original question, perturbed question) -> {"same_meaning": bool, ...}
SemanticJudgeFn = Callable[[str, str], dict[str, Any]]


def answer_token_count(backend, continuation_ids: Sequence[int], answer_sentence: str) -> int:  # type: ignore[no-untyped-def]
    """How many leading continuation tokens it takes to spell the answer sentence."""
    target = answer_sentence.strip()
    if not target:
        return 0
    for k in range(1, len(continuation_ids) + 1):
        if target in backend.decode(continuation_ids[:k]):
            return k
    return len(continuation_ids)


class MatchaRunner:
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
        prefix, head, _, tail = prompt.segments("")
        self.prefix_ids = backend.bos_ids + backend.encode(prefix)
        self.head_ids = backend.encode(head.rstrip())
        self.tail_ids = backend.encode(tail)
        self._allowed: torch.Tensor | None = None
        self.hyper = asdict(config)

    def _decode(self, suffixes: Any) -> list[Any]:
        """Greedy completions cut at the stop strings; token-id lists or one embeddings tensor."""
        if isinstance(suffixes, torch.Tensor):
            return self.backend.decode_batch(self.prefix_ids, suffixes, max_new_tokens=self.config.max_new_tokens,
                                             stops=[STOP_STRINGS] * suffixes.shape[0])
        return self.backend.decode_many(self.prefix_ids, suffixes, max_new_tokens=self.config.max_new_tokens,
                                        stops=[STOP_STRINGS] * len(suffixes))

    # ------------------------------------------------------------------ clean pass
    def question_ids(self, question: str) -> list[int]:
        # The question carries its leading space so "Q:" + " question" tokenises like "Q: question".
        return self.backend.encode(" " + question.strip())

    def clean_records(self, examples: Sequence[Example]) -> list[dict[str, Any]]:
        def key_of(ex: Example) -> str:
            return unit_key("matcha_clean", self.backend_key, ex.id, ex.question, self.prompt.prefix,
                            self.config.max_new_tokens)

        def compute(batch: list[Example]) -> list[dict[str, Any]]:
            qids = [self.question_ids(ex.question) for ex in batch]
            rows = self._decode([self.head_ids + q + self.tail_ids for q in qids])
            return [self._graded(ex, q, row) for ex, q, row in zip(batch, qids, rows, strict=True)]

        return run_units(self.store, "matcha_clean", examples, key_of, compute, id_of=lambda e: e.id,
                         batch_size=self.batch_size, description="clean pass")

    def _graded(self, ex: Example, question_ids: list[int], row) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        # Keep exactly the generated tokens up to the stop string: they are teacher-forced later.
        continuation = list(row.token_ids)
        while continuation and not row.text.startswith(self.backend.decode(continuation)):
            continuation.pop()  # drop the tokens that spelled the stop string
        graded = grade_completion(ex, row.text)  # always against gold
        return {
            "id": ex.id,
            "question": ex.question,
            "question_ids": question_ids,
            "gold": ex.answer,
            "completion": row.text,
            "continuation_ids": continuation,
            "n_answer_tokens": answer_token_count(self.backend, continuation, graded["answer_sentence"]),
            **graded,
        }

    # ------------------------------------------------------------------ attack
    def attackable(self, clean: dict[str, Any]) -> tuple[bool, str]:
        if self.config.target_answer == "gold" and not clean["correct"]:
            return False, "clean answer wrong"
        if clean["predicted"] is None:
            return False, "no answer in the clean completion"
        if clean["n_answer_tokens"] >= len(clean["continuation_ids"]):
            return False, "no chain of thought after the answer"
        return True, ""

    @property
    def allowed_tokens(self) -> torch.Tensor:
        if self._allowed is None:
            self._allowed = ordinary_token_ids(self.backend.tokenizer)
        return self._allowed

    def attack_records(self, examples: Sequence[Example], clean: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        by_id = {ex.id: ex for ex in examples}
        todo = []
        for record in clean:
            ok, _ = self.attackable(record)
            if ok:
                todo.append(record)

        def key_of(record: dict[str, Any]) -> str:
            return unit_key("matcha_attack", self.backend_key, record["id"], record["completion"], self.hyper)

        def compute(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [self.attack_one(by_id[record["id"]], record) for record in batch]

        return run_units(self.store, "matcha_attack", todo, key_of, compute, id_of=lambda r: r["id"],
                         description=f"MATCHA {self.config.level}/{self.config.variant}")

    def attack_one(self, example: Example, clean: dict[str, Any]) -> dict[str, Any]:
        cfg = self.config
        timings: dict[str, float] = {}
        began = time.perf_counter()
        reference = Reference(clean["question_ids"], clean["continuation_ids"], clean["n_answer_tokens"])
        lam = 0.0 if cfg.variant == "cot-loss-only" else None
        objective = MatchaObjective(self.backend, self.prefix_ids, self.head_ids, self.tail_ids, reference, lam=lam,
                                    candidate_chunk=self.candidate_chunk)
        timings["reference"] = time.perf_counter() - began
        record: dict[str, Any] = {
            "id": example.id,
            "level": cfg.level,
            "variant": cfg.variant,
            "clean_question": example.question,
            "clean_completion": clean["completion"],
            "clean_answer": clean["predicted"],
            "gold": example.answer,
            "target": example.answer if cfg.target_answer == "gold" else clean["predicted"],
            "lambda": objective.lam,
            "n3": objective.n3,
            "n4": objective.n4,
            "question_span": [len(self.prefix_ids) + len(self.head_ids),
                              len(self.prefix_ids) + len(self.head_ids) + len(clean["question_ids"])],
        }
        began = time.perf_counter()
        semantic_log: list[dict[str, Any]] = []
        if cfg.level == "token":
            def gate(ids: list[int]) -> tuple[bool, dict[str, Any]]:
                verdict = self.semantic_judge(example.question, self.backend.decode(ids).strip())
                semantic_log.append(verdict)
                return bool(verdict["same_meaning"]), verdict

            result = token_attack(
                objective, list(clean["question_ids"]), self.allowed_tokens,
                TokenAttackConfig(cfg.variant, cfg.insert_ratio, cfg.topk_ratio, cfg.steps, cfg.n_candidates),
                derive_rng(cfg.seed, "matcha-token", example.id), gate,
            )
            timings["optimise"] = time.perf_counter() - began
            perturbed_text = self.backend.decode(result.question_ids).strip()
            record.update({
                "perturbed_question": perturbed_text,
                "perturbed_question_ids": result.question_ids,
                "inserted_positions": result.inserted_positions,
                "replaced_positions": result.replaced_positions,
                "edits": edit_spans(self.backend.decode, result.question_ids, result.inserted_positions,
                                    result.replaced_positions),
                "perturbed_question_span": [record["question_span"][0],
                                            record["question_span"][0] + len(result.question_ids)],
                "steps": result.steps,
            })
            began = time.perf_counter()
            row = self._decode([self.head_ids + result.question_ids + self.tail_ids])[0]
        else:
            seed = derive_seed(cfg.seed, "matcha-embedding", example.id)
            result_e = embedding_attack(
                objective,
                EmbeddingAttackConfig(cfg.eps_fraction, cfg.step_fraction, cfg.steps, cfg.random_start),
                seed=seed,
            )
            timings["optimise"] = time.perf_counter() - began
            record.update({
                "perturbed_question": None,  # an embedding perturbation has no text
                "epsilon": result_e.epsilon,
                "eps_fraction": cfg.eps_fraction,
                "max_abs_delta": result_e.max_abs_delta,
                "steps": result_e.steps,
            })
            began = time.perf_counter()
            with torch.no_grad():
                embeds = torch.cat([objective.head, result_e.question_embeds, self.backend.embed(
                    torch.tensor(self.tail_ids))]).unsqueeze(0)
            row = self._decode(embeds)[0]
        timings["generate"] = time.perf_counter() - began
        read = read_completion(row.text, example.answer_type)
        record.update({
            "perturbed_completion": row.text,
            "perturbed_answer": read["predicted"],
            "perturbed_cot": read["cot"],
            "answer_kept": answers_match(read["predicted"], record["target"], example.answer_type),
            "semantic_verdicts": len(semantic_log),
            "seconds": timings,
        })
        return record

    # ------------------------------------------------------------------ judging
    def judge(self, attacked: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Attach the reasoning verdict to every example whose answer was kept (verdicts are cached)."""
        kept = [r for r in attacked if r["answer_kept"]]
        verdicts = self.reasoning_judge(
            [(r["clean_question"], r["clean_completion"], r["perturbed_completion"]) for r in kept]
        ) if kept else []
        by_id = {r["id"]: v for r, v in zip(kept, verdicts, strict=True)}
        out = []
        for record in attacked:
            verdict = by_id.get(record["id"])
            correct = None if verdict is None else verdict.get("reasoning_correct")
            judged = {**record, "attacked": True, "reasoning": verdict,
                      "reasoning_wrong": None if correct is None else not correct}
            out.append({**judged, "outcome": outcome(judged)})
        return out
