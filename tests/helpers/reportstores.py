"""MATCHA run stores written through the store API, in the exact record format of ``attack matcha`` (stage
``matcha_outcome``, edits with offsets, judge verdicts, error types), for what the tiny models cannot produce
on demand: thousands of records, every error type, hostile text. The summary comes from the library's own
metrics (``matcha_metrics``) over those records, as the pipeline computes it, and is written by
``lifecycle.finish``.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from robusteval.lifecycle import IDENTITY_VERSION, finish, open_run
from robusteval.metrics.matcha import matcha_metrics, outcome
from robusteval.store import unit_key

ERROR_TYPES = ("wrong calculation", "wrong reasoning", "wrong information", "irrelevant information")
QUESTION = "Tom has {a} apples and buys {b} more at the market. How many apples does he have now?"
#: Filler steps, so chains of thought are as long and as varied as a small model's (about 300 characters).
STEPS = ("First we count what he has: {a} apples.", "Then he buys {b} more, so we add them.",
         "The market sells them in bags of {c}.", "He gives {d} to his sister, then takes them back.",
         "So the total is the sum of both numbers.", "We check the units: apples, not bags.",
         "Half of {c} would be {h}, which we do not need.", "Counting again gives the same result.")


def _record(i: int, rng: random.Random, text: str | None, kind: str | None = None) -> dict[str, Any]:
    a, b = rng.randint(2, 40), rng.randint(2, 40)
    question = text or QUESTION.format(a=a, b=b)
    inserted = ["purple", "quickly", "seven", "river"][: rng.randint(1, 4)]
    words = question.split(" ")
    edits, out = [], []
    for j, word in enumerate(words):
        out.append(word)
        if j % 3 == 1 and inserted:
            token = inserted.pop()
            start = len(" ".join(out)) + 1
            out.append(token)
            edits.append({"start": start, "end": start + len(token), "kind": rng.choice(["inserted", "replaced"]),
                          "token_id": rng.randint(100, 900)})
    perturbed = " ".join(out)
    kind = kind or rng.choices(["success", "unsuccessful", "wrong"], weights=[2, 5, 3])[0]
    answer = str(a + b)
    wrong_eq = f"{a} + {b} = {a + b + 1}"
    c, d = rng.randint(2, 12), rng.randint(1, 9)
    filler = " ".join(rng.sample(STEPS, 4)).format(a=a, b=b, c=c, d=d, h=c / 2)
    cot = f"{filler} {wrong_eq}." if kind == "success" else f"{filler} {a} + {b} = {a + b}."
    verdict = {"judge": "arith", "label": kind != "success", "reasoning_correct": kind != "success",
               "raw": text or (f"1 equation(s) checked, 1 false: {wrong_eq}" if kind == "success"
                               else "1 equation(s) checked, 0 false"),
               "detail": {"method": "arithmetic", "n_equations": 1,
                          "false_equations": [{"text": wrong_eq, "holds": False}] if kind == "success" else []}}
    record = {
        "id": f"q{i:05d}", "attacked": True, "clean_correct": True, "skip_reason": None, "level": "token",
        "clean_question": question, "perturbed_question": perturbed, "edits": edits, "gold": answer,
        "target": answer, "clean_answer": answer, "clean_completion": f" The answer is {answer}. {a} + {b} = {answer}.",
        "perturbed_answer": answer if kind != "wrong" else str(a + b + 2),
        "perturbed_completion": f" The answer is {answer if kind != 'wrong' else a + b + 2}. {cot}",
        "answer_kept": kind != "wrong", "reasoning_wrong": None if kind == "wrong" else kind == "success",
        "reasoning": None if kind == "wrong" else verdict, "clean_cot_wrong": False,
        "insertions": [{"accepted": True, "semantic": {"judge": "none(always-same-meaning)", "label": True,
                                                       "raw": text or ""}}],
        "steps": [{"step": 0, "loss": {"total": 1.0}, "proposals": []}],
    }
    record["outcome"] = outcome(record)
    record["error_type"] = None
    if kind == "success":
        category = ERROR_TYPES[i % len(ERROR_TYPES)]
        record["error_type"] = {"category": category, "judge": "arith" if category == ERROR_TYPES[0] else
                                "errortype:tiny", "raw": f"the mistake is {category}", "detail": {}}
    return record


def _kept(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its answer kept (a changed answer is WR whatever else the judge said)."""
    if not record["answer_kept"]:
        answer = record["target"]
        record.update({"answer_kept": True, "perturbed_answer": answer, "reasoning_wrong": False,
                       "perturbed_completion": f" The answer is {answer}. {record['clean_completion'].split('. ', 1)[1]}",
                       "reasoning": {"judge": "arith", "label": True, "reasoning_correct": True,
                                     "raw": "1 equation(s) checked, 0 false", "detail": {"method": "arithmetic"}}})
    return record


def _outcome(record: dict[str, Any], kind: str) -> dict[str, Any]:
    """``record`` made into one of the outcomes the random draw does not give: ``clean_cot_wrong`` (attacked,
    answer kept, its clean reasoning already judged wrong), ``unjudged`` (answer kept, the judge abstained: no
    equation to check) or ``skip:<reason>`` (not attacked, with that reason)."""
    if kind == "clean_cot_wrong":
        _kept(record)["clean_cot_wrong"] = True
    elif kind == "unjudged":
        _kept(record).update({"reasoning_wrong": None, "error_type": None, "reasoning": {
            "judge": "arith", "label": None, "reasoning_correct": None, "raw": "no equation to check",
            "detail": {"method": "arithmetic", "abstained": "no equation to check"}}})
    elif kind.startswith("skip:"):
        record.update({"attacked": False, "skip_reason": kind[len("skip:"):], "reasoning": None,
                       "reasoning_wrong": None, "error_type": None})
    record["outcome"] = outcome(record)
    return record


#: Why the pipeline leaves a question alone (``MatchaRunner.attackable`` and the semantic gate), in its words.
SKIP_REASONS = ("no answer in the clean completion", "no chain of thought after the answer",
                "the semantic judge rejected all 6 random insertions")


def _skipped_record(i: int, reason: str) -> dict[str, Any]:
    """A question the attack left alone, as ``summarise_matcha`` stores it (only the clean pass's fields, and the
    attack's own for a question whose every insertion was refused)."""
    record: dict[str, Any] = {"id": f"s{i:05d}", "clean_correct": True, "attacked": False, "skip_reason": reason,
                              "error_type": None}
    if reason.startswith("the semantic judge"):
        question = QUESTION.format(a=i, b=3)
        record.update({"clean_question": question, "clean_completion": f" The answer is {i + 3}.",
                       "clean_answer": str(i + 3), "gold": str(i + 3), "skipped": reason})
    return record


def matcha_store(out: Path, n: int, *, seed: int = 0, text: str | None = None, finished: bool = True,
                 kinds: list[str] | None = None, model_name: str = "synthetic/matcha-format",
                 identity: dict[str, Any] | None = None, hyperparameters: dict[str, Any] | None = None,
                 skipped: int = 0, cot_wrong: int = 0, summary_reasons: bool = True,
                 success_check: str | None = None, summary: dict[str, Any] | None = None) -> Path:
    """A finished MATCHA run of ``n`` attacked records at ``out`` (``text``: every question and judge output;
    ``finished=False``: the records only, no summary, as a run stopped before its end). ``kinds``: each
    record's outcome (success, unsuccessful, wrong, clean_cot_wrong, unjudged or skip:<reason>) instead of a random one;
    ``identity`` and ``hyperparameters`` are added to the run's identity and summary.

    ``skipped`` more questions are not attacked (reasons cycling through :data:`SKIP_REASONS`), ``cot_wrong`` of
    the attacked ones have a clean reasoning the judge rejects; ``summary_reasons=False``: the summary does not
    count them (``skip_reasons``, ``exclusions``), as summaries before issue 20, so only the records hold them.
    ``success_check``: the run's ``--success-check`` (its records then say which checkpoint decided them).
    ``summary``: keys set in the summary over the computed ones (issue 26's ``counting``, ``flags``,
    ``n_unjudged``, ``denominators``...)."""
    rng = random.Random(seed)
    chosen = kinds or [None] * n
    records = [_record(i, rng, text, None if kind in (None, "clean_cot_wrong", "unjudged") or kind.startswith("skip:")
                       else kind) for i, kind in enumerate(chosen)]
    records = [_outcome(r, kind) if kind else r for r, kind in zip(records, chosen, strict=True)]
    for record in records[:cot_wrong]:  # a kept answer (a changed one is WR whatever the clean verdict)
        _kept(record).update({"clean_cot_wrong": True, "error_type": None})  # not rated: no success to classify
        record["outcome"] = outcome(record)
    if success_check is not None:
        for i, record in enumerate(records):
            record["decided_at"] = "insertion" if success_check != "final" and i % 2 else "final"
    records += [_skipped_record(i, SKIP_REASONS[i % len(SKIP_REASONS)]) for i in range(skipped)]
    model = {"source": model_name, "dtype": "float32", "device": "cpu", "backend": "hf"}
    identity = {"identity_version": IDENTITY_VERSION, "command": "attack matcha", "model": model,
                "dataset": "synthetic", "level": "token", "variant": "full", "seed": seed, **(identity or {})}
    with open_run(out, identity) as (store, _):
        for record in records:
            store.put("matcha_outcome", unit_key("matcha_outcome", record["id"]), record, example_id=record["id"])
        if not finished:
            return out
        successes = [r["error_type"]["category"] for r in records if r["error_type"]]
        error_types = {"n": len(successes), "counts": {c: successes.count(c) for c in ERROR_TYPES},
                       "shares": {c: successes.count(c) / len(successes) if successes else None
                                  for c in ERROR_TYPES}}
        computed: dict[str, Any] = {"model": model_name, "dataset": "synthetic", "level": "token",
                                    "variant": "full", "hyperparameters": {"seed": seed, **(hyperparameters or {})},
                                    **matcha_metrics(records), "error_types": error_types}
        if not summary_reasons:
            computed.pop("skip_reasons", None)
            computed.pop("exclusions", None)
        if success_check is not None:
            computed["success_check"] = computed["hyperparameters"]["success_check"] = success_check
            decided = [r["decided_at"] for r in records if r["attacked"]]
            computed["decided_at"] = {k: decided.count(k) for k in ("insertion", "final") if k in decided}
        finish(store, {**computed, **(summary or {})}, seeds={"seed": seed})
    return out


def robustness_store(out: Path, *, label_mode: str, correct: dict[str, list[bool]], unparsed: dict[str, int],
                     model_name: str = "synthetic/classifier", data_sha256: str = "0" * 64) -> Path:
    """A finished robustness run whose summary is the library's own (``robustness_summary``) over ``correct``
    ("original" and each set, one bool per example), in ``label_mode``, with ``unparsed`` labels per set."""
    from robusteval.metrics.robustness import robustness_summary

    sets = {name: values for name, values in correct.items() if name != "original"}
    model = {"source": model_name, "dtype": "float32", "device": "cpu", "backend": "hf"}
    identity = {"identity_version": IDENTITY_VERSION, "command": "robustness", "model": model, "dataset": "ocnli",
                "data_file": "dev.json", "data_sha256": data_sha256, "sets": ",".join(sets), "seed": 0}
    summary = {"model": model_name, "dataset": "ocnli", "label_mode": label_mode, "sets_spec": ",".join(sets),
               **robustness_summary(correct["original"], sets, n_resamples=200), "n_unparsed": unparsed,
               "skip_reasons": {}, "exclusions": {}}
    with open_run(out, identity) as (store, _):
        finish(store, summary, seeds={"seed": 0})
    return out


#: Issue 26's flags as the MATCHA pipeline writes them into a summary's ``flags``.
DETERMINISTIC = {"code": "deterministic_judge", "text": "reasoning judged by deterministic checkers only (arith)"}
UNGATED = {"code": "ungated", "text": "semantic gate: none (edits unchecked)"}


def denominator(unsuccessful: int, success: int, wrong: int, definition: str, *, unjudged: int = 0,
                clean_cot_wrong: int = 0) -> dict[str, Any]:
    """One entry of a summary's ``denominators`` as the library writes it (``metrics.matcha.denominator_view``):
    n over every category, each rate with its count and Wilson interval, and the ``among_judged`` view."""
    from robusteval.metrics.matcha import CATEGORIES, denominator_view

    counts = {"unsuccessful": unsuccessful, "success": success, "wrong": wrong, "unjudged": unjudged,
              "clean_cot_wrong": clean_cot_wrong}
    return denominator_view(counts, [kind for _, kind, _ in CATEGORIES], definition)


def authors_summary(ours: dict[str, Any], authors: dict[str, Any]) -> dict[str, Any]:
    """A summary's keys under the authors' counting (``matcha_store(summary=...)``): both denominators, the
    authors' the headline (the top-level rates, ``n_attacked``, ``counts``, intervals and ``among_judged``)."""
    from robusteval.metrics.matcha import CATEGORIES

    return {"counting": "authors", "headline_denominator": "authors", "denominators": {"authors": authors,
                                                                                      "ours": ours},
            "n_attacked": authors["n"], "counts": authors["counts"], "among_judged": authors["among_judged"],
            **{key: authors[key] for key, _, _ in CATEGORIES if key in authors},
            "ci95": {"acc": [0.5, 1.0], **authors["ci95"]}}
