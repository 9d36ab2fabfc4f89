"""Loaders of the built-in benchmarks, each in its published format: GSM8K (JSON Lines, "#### answer"),
SingleEq (one JSON array), StrategyQA (a BIG-bench task object) and OCNLI (JSON Lines).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from robusteval.data.answers import parse_number
from robusteval.data.example import Example
from robusteval.data.loaders.fields import (
    _done,
    _ident,
    _Ids,
    _Loc,
    _nonempty,
    _number,
    _require,
    _text,
    _type_name,
)
from robusteval.data.loaders.files import _check_file, json_document, jsonl_examples
from robusteval.data.loaders.registry import register_dataset
from robusteval.errors import DataError


@register_dataset("gsm8k", "number", default_file="gsm8k/test.jsonl")
def _load_gsm8k(path: str | Path, *, limit: int | None = None) -> list[Example]:
    ids = _Ids()

    def example(record: dict[str, Any], lineno: int, loc: _Loc) -> Example:
        question = _text(_require(record, "question", loc), "question", loc)
        solution = _text(_require(record, "answer", loc), "answer", loc)
        _, marker, final = solution.rpartition("#### ")
        if not marker:
            raise loc.error("no '#### ' before the final answer", "answer")
        gold = final.strip().replace(",", "")  # "1,000" -> "1000"
        if not gold:
            raise loc.error("nothing after '#### '", "answer")
        if parse_number(gold) is None:
            raise loc.error(f"expected a number after '#### ', got {gold[:60]!r}", "answer")
        ident = f"gsm8k-{lineno - 1}"  # 0-based line index: stable however many lines a run reads
        ids.add(ident, loc, None)
        return Example(ident, question, gold, "number", {"solution": solution})

    return jsonl_examples(Path(path), limit, example)


@register_dataset("singleeq", "number", default_file="singleeq/questions.json")
def _load_singleeq(path: str | Path, *, limit: int | None = None) -> list[Example]:
    path = Path(path)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    ids = _Ids()
    with json_document(path) as (lines, scanner):
        if scanner.peek() != "[":
            raise DataError(path, "expected a JSON array of problems", line=lines.line(scanner.pos))
        for index, (start, record) in enumerate(scanner.array()):
            loc = _Loc(path, lines.line(start), f"record {index}")
            if not isinstance(record, dict):
                raise loc.error(f"expected a JSON object, got {_type_name(record)}")
            question = _text(_require(record, "sQuestion", loc), "sQuestion", loc)
            solutions = _require(record, "lSolutions", loc)
            if not isinstance(solutions, list) or not solutions:
                got = "an empty array" if solutions == [] else _type_name(solutions)
                raise loc.error(f"expected a non-empty array, got {got}", "lSolutions")
            answer = _number(solutions[0], "lSolutions", loc)
            ident = f"singleeq-{_ident(_require(record, 'iIndex', loc), 'iIndex', loc)}"
            ids.add(ident, loc, "iIndex")
            meta = {k: v for k, v in record.items() if k not in ("sQuestion", "iIndex")}
            out.append(Example(ident, question, answer, "number", meta))
            if _done(out, limit):
                break
        else:
            scanner.end()
    return _nonempty(out, path)


@register_dataset("strategyqa", "yesno", default_file="strategyqa/task.json")
def _load_strategyqa(path: str | Path, *, limit: int | None = None) -> list[Example]:
    path = Path(path)
    _check_file(path)
    out: list[Example] = []
    if limit == 0:
        return out
    found = False
    with json_document(path) as (lines, scanner):
        if scanner.peek() != "{":
            raise DataError(path, "expected a BIG-bench task object", line=lines.line(scanner.pos))
        for key in scanner.members():
            if key != "examples" or found:
                scanner.value()  # other task metadata (canary, metrics, ...) is not needed
                continue
            found = True
            if scanner.peek() != "[":
                line = lines.line(scanner.pos)
                raise DataError(
                    path, f"expected an array, got {_type_name(scanner.value())}", line=line, field=key
                )
            for index, (start, record) in enumerate(scanner.array()):
                out.append(
                    _strategyqa_example(record, index, _Loc(path, lines.line(start), f"record {index}"))
                )
                if _done(out, limit):
                    return out
        scanner.end()
    if not found:
        raise DataError(path, "required field is missing", line=1, field="examples")
    return _nonempty(out, path)


def _strategyqa_example(record: object, index: int, loc: _Loc) -> Example:
    if not isinstance(record, dict):
        raise loc.error(f"expected a JSON object, got {_type_name(record)}")
    question = _text(_require(record, "input", loc), "input", loc)
    scores = _require(record, "target_scores", loc)
    if not isinstance(scores, dict):
        raise loc.error(f"expected an object, got {_type_name(scores)}", "target_scores")
    for label, score in scores.items():
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise loc.error(
                f"score of {label!r}: expected a number, got {_type_name(score)}", "target_scores"
            )
    positive = [label for label, score in scores.items() if score > 0]
    if len(positive) != 1 or positive[0].strip().lower() not in ("yes", "no"):
        raise loc.error(f"expected exactly one positive score, on Yes or No; got {scores}", "target_scores")
    meta: dict[str, Any] = {}
    if "target" in record:
        meta["target"] = record["target"]  # the answer plus a short explanation
    return Example(f"strategyqa-{index}", question, positive[0].strip().lower(), "yesno", meta)


_OCNLI_LABELS = frozenset({"entailment", "neutral", "contradiction"})


@register_dataset("ocnli", "label", default_file="ocnli/dev.json")
def _load_ocnli(path: str | Path, *, limit: int | None = None) -> list[Example]:
    ids = _Ids()

    def example(record: dict[str, Any], lineno: int, loc: _Loc) -> Example | None:
        label = _text(_require(record, "label", loc), "label", loc)
        if label == "-":
            return None  # no annotator majority; the OCNLI README says to exclude these
        if label not in _OCNLI_LABELS:
            raise loc.error(
                f"expected one of {', '.join(sorted(_OCNLI_LABELS))} or '-', got {label!r}", "label"
            )
        premise = _text(_require(record, "sentence1", loc), "sentence1", loc)
        hypothesis = _text(_require(record, "sentence2", loc), "sentence2", loc)
        ident = f"ocnli-{_ident(_require(record, 'id', loc), 'id', loc)}"
        ids.add(ident, loc, "id")
        meta = {"hypothesis": hypothesis, "genre": record.get("genre"), "level": record.get("level")}
        return Example(ident, premise, label, "label", meta)

    return jsonl_examples(Path(path), limit, example)  # JSON Lines despite the .json name
