"""Dataset loaders: the real benchmark files, and one-line errors for every kind of broken input."""

from __future__ import annotations

import json
import sys
import tempfile
import types
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.shared import shared_file
from robusteval.data.example import Example
from robusteval.data.loaders import (
    DATA_DIR_ENV,
    DATASETS,
    dataset_names,
    load_dataset,
    register_dataset,
)
from robusteval.errors import DataError, UserError


def data_error(call: Callable[[], object]) -> str:
    """Run ``call``, expect a DataError, and return its message (which must be one line)."""
    with pytest.raises(DataError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def gsm_record(question: str = "How many?", final: str = "3") -> dict[str, str]:
    return {"question": question, "answer": f"1 + 2 = <<1+2=3>>3\n#### {final}"}


# ----------------------------------------------------------------------------------------------- registry


def test_builtin_names_are_registered() -> None:
    assert {"gsm8k", "singleeq", "strategyqa", "ocnli", "jsonl", "csv", "hf"} <= set(dataset_names())
    assert dataset_names() == sorted(dataset_names())


def test_register_passes_only_the_keywords_a_loader_accepts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    DATASETS.entries()  # the built-ins are registered before the snapshot
    monkeypatch.setattr(DATASETS, "_entries", dict(DATASETS._entries))  # keep the global registry clean
    calls: list[tuple[object, dict[str, Any]]] = []

    @register_dataset("toy", "text")
    def toy(path: str | Path, *, limit: int | None = None) -> list[Example]:
        calls.append((path, {"limit": limit}))
        return [Example("toy-0", "q", "a", "text")]

    assert "toy" in dataset_names()
    assert load_dataset("toy", tmp_path / "x", limit=3)[0].id == "toy-0"
    # File loaders always read the whole file (limit applied after): a bad line anywhere is reported.
    assert calls == [(tmp_path / "x", {"limit": None})]

    @register_dataset("toy-stream", "text", streams=True)
    def toy_stream(path: str | Path, *, limit: int | None = None) -> list[Example]:
        calls.append((path, {"limit": limit}))
        return [Example("toy-0", "q", "a", "text")]

    load_dataset("toy-stream", "hub/x", limit=3)
    assert calls[-1] == ("hub/x", {"limit": 3})
    with pytest.raises(ValueError, match="already registered"):
        register_dataset("toy", "text")(toy)
    with pytest.raises(ValueError, match="unknown answer type"):
        register_dataset("toy2", "colour")


def test_bad_arguments_are_user_errors(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [gsm_record()])
    with pytest.raises(UserError, match="unknown dataset 'nope'"):
        load_dataset("nope", path)
    with pytest.raises(UserError, match="limit must be >= 0"):
        load_dataset("gsm8k", path, limit=-1)
    with pytest.raises(UserError, match="fixed format"):
        load_dataset("gsm8k", path, fields={"question": "q"})
    with pytest.raises(UserError, match="answer type 'number', not 'yesno'"):
        load_dataset("gsm8k", path, answer_type="yesno")
    assert load_dataset("gsm8k", path, answer_type="number")[0].answer == "3"
    with pytest.raises(UserError, match="unknown field name"):
        load_dataset("jsonl", path, fields={"prompt": "question"})
    with pytest.raises(UserError, match="unknown answer type"):
        load_dataset("jsonl", path, answer_type="colour")


def test_default_path_comes_from_the_data_dir_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    with pytest.raises(UserError, match=DATA_DIR_ENV):
        load_dataset("gsm8k")
    with pytest.raises(UserError, match="needs a path"):
        load_dataset("jsonl")
    (tmp_path / "gsm8k").mkdir()
    write_jsonl(tmp_path / "gsm8k" / "test.jsonl", [gsm_record(final="7")])
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert [e.answer for e in load_dataset("gsm8k")] == ["7"]


# ---------------------------------------------------------------------------------------------- real data


def test_gsm8k_first_20_match_the_file() -> None:
    gsm8k = shared_file("gsm8k/test.jsonl")
    examples = load_dataset("gsm8k", gsm8k, limit=20)
    raw = [json.loads(line) for line in gsm8k.read_text(encoding="utf-8").splitlines()[:20]]
    assert [e.id for e in examples] == [f"gsm8k-{i}" for i in range(20)]
    assert [e.question for e in examples] == [r["question"] for r in raw]
    assert [e.meta["solution"] for e in examples] == [r["answer"] for r in raw]
    assert examples[0].answer == "18"
    assert all(e.answer_type == "number" for e in examples)


def test_gsm8k_full_split() -> None:
    examples = load_dataset("gsm8k", shared_file("gsm8k/test.jsonl"))
    assert len(examples) == 1319
    assert len({e.id for e in examples}) == 1319
    # Some golds are written with thousands separators; none survive.
    with_commas = [e for e in examples if "," in e.meta["solution"].rsplit("#### ", 1)[1]]
    assert with_commas
    assert all(e.answer.lstrip("-").replace(".", "", 1).isdigit() for e in examples)


def test_singleeq() -> None:
    examples = load_dataset("singleeq", shared_file("singleeq/questions.json"))
    assert len(examples) == 508
    assert (examples[0].id, examples[0].answer) == ("singleeq-0", "43")
    by_solution = {e.meta["lSolutions"][0]: e.answer for e in examples}
    assert by_solution[11.5] == "11.5"
    assert all(not e.answer.endswith(".0") for e in examples)


def test_strategyqa() -> None:
    examples = load_dataset("strategyqa", shared_file("strategyqa/task.json"))
    assert len(examples) == 2290
    assert Counter(e.answer for e in examples) == {"yes": 1071, "no": 1219}
    assert examples[0].id == "strategyqa-0" and examples[-1].id == "strategyqa-2289"
    # The explanation starts with the answer it explains.
    assert all(e.meta["target"].lower().startswith(e.answer) for e in examples)


def test_ocnli_drops_no_majority_rows() -> None:
    examples = load_dataset("ocnli", shared_file("ocnli/dev.json"))
    assert len(examples) == 2950
    assert Counter(e.answer for e in examples) == {"neutral": 1103, "entailment": 947, "contradiction": 900}
    first = examples[0]
    assert first.id == "ocnli-0" and first.answer_type == "label"
    assert first.question == "身上裹一件工厂发的棉大衣,手插在袖筒里"
    assert first.meta == {"hypothesis": "身上至少一件衣服", "genre": "lit", "level": "medium"}


# --------------------------------------------------------------------------------------- file-level errors


@pytest.mark.parametrize("name", ["gsm8k", "singleeq", "strategyqa", "ocnli", "jsonl", "csv"])
def test_missing_and_empty_files(name: str, tmp_path: Path) -> None:
    missing = tmp_path / f"absent-{name}.data"
    assert f"absent-{name}.data" in data_error(lambda: load_dataset(name, missing))
    empty = tmp_path / f"empty-{name}.data"
    empty.write_bytes(b"")
    message = data_error(lambda: load_dataset(name, empty))
    assert f"empty-{name}.data" in message and "empty" in message
    blank = tmp_path / f"blank-{name}.data"
    blank.write_text("\n  \n", encoding="utf-8")
    assert f"blank-{name}.data" in data_error(lambda: load_dataset(name, blank))


def test_directory_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "test.jsonl").write_text("{}\n")
    message = data_error(lambda: load_dataset("jsonl", tmp_path))
    assert "is a directory, not a data file" in message and str(tmp_path / "test.jsonl") in message


def test_jsonl_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    good = json.dumps(gsm_record()).encode() + b"\n"
    prefix = b'{"question": "caf'
    path.write_bytes(good + good + prefix + b'\xe9", "answer": "#### 1"}\n')
    message = data_error(lambda: load_dataset("gsm8k", path))
    assert "latin.jsonl:3:" in message and "UTF-8" in message
    assert f"byte offset {2 * len(good) + len(prefix)}" in message


def test_whole_json_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(b'[\n{"sQuestion": "a",\n "lSolutions": [1.0], "iIndex": 0},\n{"sQuestion": "\xff"}]')
    message = data_error(lambda: load_dataset("singleeq", path))
    assert "bad.json:4:" in message and "UTF-8" in message


def test_malformed_json_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text(json.dumps(gsm_record()) + '\n{"question": "x", "answer": }\n', encoding="utf-8")
    message = data_error(lambda: load_dataset("gsm8k", path))
    assert "broken.jsonl:2:" in message and "invalid JSON: Expecting value" in message


def test_jsonl_line_must_be_an_object(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "arr.jsonl", [gsm_record(), [1, 2]])
    message = data_error(lambda: load_dataset("jsonl", path, answer_type="text"))
    assert "arr.jsonl:2:" in message and "expected a JSON object, got array" in message


# -------------------------------------------------------------------------------------------------- gsm8k


def test_gsm8k_gold_is_after_the_last_marker_without_commas(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "g.jsonl",
        [gsm_record(final="1,000"), {"question": "q", "answer": "#### 5 is wrong\n#### -2.5 "}],
    )
    examples = load_dataset("gsm8k", path)
    assert [(e.id, e.answer) for e in examples] == [("gsm8k-0", "1000"), ("gsm8k-1", "-2.5")]


@pytest.mark.parametrize(
    ("record", "field", "fragment"),
    [
        ({"answer": "#### 3"}, "question", "required field is missing"),
        ({"question": 7, "answer": "#### 3"}, "question", "expected a string, got number"),
        ({"question": "   ", "answer": "#### 3"}, "question", "is empty"),
        ({"question": "q"}, "answer", "required field is missing"),
        ({"question": "q", "answer": "the answer is 3"}, "answer", "no '#### '"),
        ({"question": "q", "answer": "3 ####  "}, "answer", "nothing after '#### '"),
    ],
)
def test_gsm8k_field_errors(tmp_path: Path, record: dict[str, Any], field: str, fragment: str) -> None:
    path = write_jsonl(tmp_path / "gsm.jsonl", [gsm_record(), record])
    message = data_error(lambda: load_dataset("gsm8k", path))
    assert "gsm.jsonl:2:" in message and f"field '{field}'" in message and fragment in message


def test_limit_still_reports_later_bad_lines(tmp_path: Path) -> None:
    # The whole file is checked whatever the limit: --limit 3 and --limit 30 accept the same files.
    path = tmp_path / "big.jsonl"
    good = "".join(json.dumps(gsm_record(final=str(i))) + "\n" for i in range(20)).encode()
    path.write_bytes(good + b'{not json\n{"question": 1}\n\xff\xfe\n')
    for limit in (3, 20, 21, None):
        assert "big.jsonl:21:" in data_error(lambda limit=limit: load_dataset("gsm8k", path, limit=limit))
    path.write_bytes(good)
    assert [e.answer for e in load_dataset("gsm8k", path, limit=3)] == ["0", "1", "2"]
    assert load_dataset("gsm8k", path, limit=0) == []


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "dup.jsonl",
        [
            {"id": "a", "question": "q", "answer": 1},
            {"id": "b", "question": "q", "answer": 2},
            {"id": "a", "question": "q", "answer": 3},
        ],
    )
    message = data_error(lambda: load_dataset("jsonl", path))
    assert (
        "dup.jsonl:3:" in message
        and "field 'id'" in message
        and "duplicate id 'a' (first on line 1)" in message
    )


# ----------------------------------------------------------------------------------------------- singleeq


def singleeq_record(index: int, solutions: object = (43.0,), **extra: object) -> dict[str, object]:
    sols = list(solutions) if isinstance(solutions, tuple) else solutions
    return {"sQuestion": f"question {index}", "lSolutions": sols, "iIndex": index, **extra}


def write_pretty(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def test_singleeq_number_formatting(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps([singleeq_record(0), singleeq_record(5, (2.5,)), singleeq_record(9, (7,))]))
    examples = load_dataset("singleeq", path)
    assert [(e.id, e.answer) for e in examples] == [
        ("singleeq-0", "43"),
        ("singleeq-5", "2.5"),
        ("singleeq-9", "7"),
    ]


@pytest.mark.parametrize(
    ("bad", "field", "fragment"),
    [
        ({"lSolutions": []}, "lSolutions", "expected a non-empty array, got an empty array"),
        ({"lSolutions": "43"}, "lSolutions", "expected a non-empty array, got string"),
        ({"lSolutions": ["43"]}, "lSolutions", "expected a number, got string"),
        ({"sQuestion": None}, "sQuestion", "expected a string, got null"),
        ({"iIndex": 1}, "iIndex", "duplicate id 'singleeq-1' (first on line LINE, record 1)"),
    ],
)
def test_singleeq_field_errors(tmp_path: Path, bad: dict[str, Any], field: str, fragment: str) -> None:
    records = [singleeq_record(0), singleeq_record(1), singleeq_record(2) | bad]
    path = write_pretty(tmp_path / "seq.json", records)
    starts = [n for n, line in enumerate(path.read_text().splitlines(), 1) if line == " {"]
    message = data_error(lambda: load_dataset("singleeq", path))
    fragment = fragment.replace("LINE", str(starts[1]))
    assert f"seq.json:{starts[2]}:" in message and f"field '{field}'" in message and fragment in message
    assert "(record 2)" in message


def test_singleeq_one_line_file_reports_record_index(tmp_path: Path) -> None:
    path = tmp_path / "flat.json"
    path.write_text(json.dumps([singleeq_record(0), {"sQuestion": "q", "iIndex": 1}]))
    message = data_error(lambda: load_dataset("singleeq", path))
    assert "flat.json:1:" in message and "field 'lSolutions'" in message and "(record 1)" in message


def test_singleeq_syntax_and_shape_errors(tmp_path: Path) -> None:
    path = tmp_path / "syntax.json"
    path.write_text('[\n{"sQuestion": "q", "lSolutions": [1], "iIndex": 0}\n{"sQuestion": "r"}\n]')
    message = data_error(lambda: load_dataset("singleeq", path))
    assert "syntax.json:3:" in message and "invalid JSON" in message and "delimiter" in message
    # A limit does not hide the broken tail.
    assert "syntax.json:3:" in data_error(lambda: load_dataset("singleeq", path, limit=1))
    trailing = tmp_path / "trailing.json"
    trailing.write_text('[{"sQuestion": "q", "lSolutions": [1], "iIndex": 0}]\n]')
    assert "trailing.json:2:" in data_error(lambda: load_dataset("singleeq", trailing))
    obj = write_pretty(tmp_path / "obj.json", {"a": 1})
    assert "obj.json:1:" in data_error(lambda: load_dataset("singleeq", obj))
    empty = tmp_path / "none.json"
    empty.write_text("[]")
    assert "no examples" in data_error(lambda: load_dataset("singleeq", empty))


# --------------------------------------------------------------------------------------------- strategyqa


def task(examples: list[Any]) -> dict[str, Any]:
    return {"canary": "x", "name": "strategyqa", "examples": examples, "metrics": ["m"]}


def sqa(question: str, yes: int, no: int, target: str = "Yes. Because.") -> dict[str, Any]:
    return {"input": question, "target_scores": {"Yes": yes, "No": no}, "target": target}


def test_strategyqa_answers_and_meta(tmp_path: Path) -> None:
    path = write_pretty(tmp_path / "t.json", task([sqa("a?", 1, 0), sqa("b?", 0, 1, "No. Since.")]))
    examples = load_dataset("strategyqa", path)
    assert [(e.id, e.answer, e.meta["target"]) for e in examples] == [
        ("strategyqa-0", "yes", "Yes. Because."),
        ("strategyqa-1", "no", "No. Since."),
    ]
    assert all(e.answer_type == "yesno" for e in examples)


@pytest.mark.parametrize(
    ("bad", "field", "fragment"),
    [
        (sqa("c?", 1, 1), "target_scores", "exactly one positive"),
        (sqa("c?", 0, 0), "target_scores", "exactly one positive"),
        ({"input": "c?", "target_scores": {"Maybe": 1}}, "target_scores", "exactly one positive"),
        ({"input": "c?", "target_scores": {"Yes": "1", "No": 0}}, "target_scores", "expected a number"),
        ({"input": "c?", "target_scores": [1, 0]}, "target_scores", "expected an object, got array"),
        ({"target_scores": {"Yes": 1, "No": 0}}, "input", "required field is missing"),
    ],
)
def test_strategyqa_field_errors(tmp_path: Path, bad: dict[str, Any], field: str, fragment: str) -> None:
    path = write_pretty(tmp_path / "task.json", task([sqa("a?", 1, 0), bad]))
    starts = [n for n, line in enumerate(path.read_text().splitlines(), 1) if line == "  {"]
    message = data_error(lambda: load_dataset("strategyqa", path))
    assert f"task.json:{starts[1]}:" in message and f"field '{field}'" in message and fragment in message
    assert "(record 1)" in message
    assert data_error(lambda: load_dataset("strategyqa", path, limit=1)) == message  # a limit hides nothing


def test_strategyqa_needs_examples(tmp_path: Path) -> None:
    path = write_pretty(tmp_path / "noex.json", {"name": "strategyqa"})
    message = data_error(lambda: load_dataset("strategyqa", path))
    assert "noex.json:1:" in message and "field 'examples'" in message
    wrong = write_pretty(tmp_path / "wrong.json", {"examples": {"a": 1}})
    assert "field 'examples': expected an array, got object" in data_error(
        lambda: load_dataset("strategyqa", wrong)
    )


# -------------------------------------------------------------------------------------------------- ocnli


def nli(ident: int, label: str, **extra: object) -> dict[str, object]:
    record: dict[str, object] = {"level": "easy", "sentence1": "前提", "sentence2": "假设", "label": label}
    return record | {"genre": "gov", "prem_id": "gov_1", "id": ident} | extra


def test_ocnli_limit_counts_kept_rows(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "dev.json", [nli(0, "-"), nli(1, "neutral"), nli(2, "-"), nli(3, "entailment")]
    )
    assert [e.id for e in load_dataset("ocnli", path, limit=2)] == ["ocnli-1", "ocnli-3"]


@pytest.mark.parametrize(
    ("bad", "field", "fragment"),
    [
        (nli(1, "maybe"), "label", "got 'maybe'"),
        (nli(1, "neutral", sentence2=3), "sentence2", "expected a string, got number"),
        ({k: v for k, v in nli(1, "neutral").items() if k != "sentence1"}, "sentence1", "missing"),
        (nli(0, "neutral"), "id", "duplicate id 'ocnli-0' (first on line 1)"),
        (nli(True, "neutral"), "id", "expected a string, got boolean"),
    ],
)
def test_ocnli_field_errors(tmp_path: Path, bad: dict[str, Any], field: str, fragment: str) -> None:
    path = write_jsonl(tmp_path / "dev.json", [nli(0, "contradiction"), bad])
    message = data_error(lambda: load_dataset("ocnli", path))
    assert "dev.json:2:" in message and f"field '{field}'" in message and fragment in message


# ---------------------------------------------------------------------------------------- jsonl and csv


def test_jsonl_field_mapping_fallback_ids_and_meta(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    path.write_text(
        '{"problem": "1+1?", "solution": 2, "source": "a"}\n\n{"problem": "2.5*1?", "solution": 2.5}\n',
        encoding="utf-8",
    )
    examples = load_dataset("jsonl", path, fields={"question": "problem", "answer": "solution"})
    assert [(e.id, e.question, e.answer, e.answer_type) for e in examples] == [
        ("mine-0", "1+1?", "2", "number"),
        ("mine-2", "2.5*1?", "2.5", "number"),
    ]
    assert examples[0].meta == {"source": "a"} and examples[1].meta == {}
    message = data_error(lambda: load_dataset("jsonl", path, fields={"question": "q"}))
    assert "mine.jsonl:1:" in message and "field 'q'" in message
    # An explicitly mapped id field must exist.
    message = data_error(
        lambda: load_dataset("jsonl", path, fields={"id": "uid", "question": "problem", "answer": "solution"})
    )
    assert "mine.jsonl:1:" in message and "field 'uid'" in message


def test_jsonl_yesno_answers_are_normalised(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "yn.jsonl",
        [{"id": 1, "question": "a", "answer": "Yes"}, {"id": 2, "question": "b", "answer": False}],
    )
    examples = load_dataset("jsonl", path, answer_type="yesno")
    assert [(e.id, e.answer, e.answer_type) for e in examples] == [
        ("1", "yes", "yesno"),
        ("2", "no", "yesno"),
    ]
    bad = write_jsonl(tmp_path / "yn2.jsonl", [{"question": "a", "answer": "perhaps"}])
    message = data_error(lambda: load_dataset("jsonl", bad, answer_type="yesno"))
    assert "yn2.jsonl:1:" in message and "field 'answer'" in message and "expected yes or no" in message
    assert "expected a string or number, got boolean" in data_error(
        lambda: load_dataset("jsonl", write_jsonl(tmp_path / "b.jsonl", [{"question": "a", "answer": True}]))
    )


def test_csv_with_bom_multiline_records_and_mapping(tmp_path: Path) -> None:
    path = tmp_path / "sheet.csv"
    path.write_bytes('\ufeffuid,problem,gold,notes\na,"line one\nline two",3,n1\n\nb,plain,4,\n'.encode())
    examples = load_dataset(
        "csv", path, fields={"id": "uid", "question": "problem", "answer": "gold"}, answer_type="text"
    )
    assert [(e.id, e.question, e.answer, e.meta) for e in examples] == [
        ("a", "line one\nline two", "3", {"notes": "n1"}),
        ("b", "plain", "4", {"notes": ""}),
    ]
    assert load_dataset("csv", path, fields={"question": "problem", "answer": "gold"})[1].id == "sheet-1"


def test_csv_errors_report_the_physical_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text('id,question,answer\n1,"two\nlines",5\n\n2,,6\n', encoding="utf-8")
    message = data_error(lambda: load_dataset("csv", path))
    assert "rows.csv:5:" in message and "field 'question'" in message and "is empty" in message
    assert data_error(lambda: load_dataset("csv", path, limit=1)) == message  # a limit hides nothing
    spanning = tmp_path / "span.csv"
    spanning.write_text('question,answer\nq,1\n\n"three\nline\nquestion",\n', encoding="utf-8")
    message = data_error(lambda: load_dataset("csv", spanning))
    assert "span.csv:4:" in message and "field 'answer'" in message  # where the record starts, not ends

    header = tmp_path / "header.csv"
    header.write_text("id,prompt,answer\n1,q,2\n", encoding="utf-8")
    message = data_error(lambda: load_dataset("csv", header))
    assert "header.csv:1:" in message and "field 'question'" in message and "not in the header" in message

    wide = tmp_path / "wide.csv"
    wide.write_text("question,answer\nq,1\nq,2,extra\n", encoding="utf-8")
    assert "wide.csv:3:" in data_error(lambda: load_dataset("csv", wide))

    short = tmp_path / "short.csv"
    short.write_text("question,answer\nq,1\nq\n", encoding="utf-8")
    message = data_error(lambda: load_dataset("csv", short))
    assert "short.csv:3:" in message and "field 'answer'" in message and "missing" in message

    dup = tmp_path / "dup.csv"
    dup.write_text("id,question,answer\nx,q,1\nx,q,2\n", encoding="utf-8")
    message = data_error(lambda: load_dataset("csv", dup))
    assert "dup.csv:3:" in message and "first on line 2" in message

    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"question,answer\nq,1\ncaf\xe9,2\n")
    message = data_error(lambda: load_dataset("csv", latin))
    assert "latin.csv:3:" in message and "UTF-8" in message

    only_header = tmp_path / "only.csv"
    only_header.write_text("question,answer\n", encoding="utf-8")
    assert "no data rows" in data_error(lambda: load_dataset("csv", only_header))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1).filter(str.strip), st.integers(-(10**12), 10**12)),
        min_size=1,
        max_size=8,
    )
)
def test_jsonl_round_trip(rows: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_jsonl(Path(tmp) / "rt.jsonl", [{"question": q, "answer": a} for q, a in rows])
        examples = load_dataset("jsonl", path)
    assert [(e.id, e.question, e.answer) for e in examples] == [
        (f"rt-{i}", q, str(a)) for i, (q, a) in enumerate(rows)
    ]


# ----------------------------------------------------------------------------------------------------- hf


def test_hf_without_datasets_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)  # makes `import datasets` fail
    with pytest.raises(UserError, match="pip install datasets"):
        load_dataset("hf", "org/name")


def test_hf_uses_config_split_and_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stand-in module: the loader's logic runs, nothing is downloaded.
    calls: list[tuple[str, str | None, str]] = []

    def fake_load(hub_id: str, config: str | None, *, split: str) -> list[dict[str, Any]]:
        calls.append((hub_id, config, split))
        return [
            {"problem": "p0", "solution": "1", "level": 1},
            {"problem": "p1", "solution": "2"},
            {"bad": 1},
        ]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load))
    fields = {"question": "problem", "answer": "solution"}
    examples = load_dataset(
        "hf", "org/math:algebra", split="train", fields=fields, limit=2, answer_type="math"
    )
    assert calls == [("org/math", "algebra", "train")]
    assert [(e.id, e.answer, e.answer_type, e.meta) for e in examples] == [
        ("math-0", "1", "math", {"level": 1}),
        ("math-1", "2", "math", {}),
    ]
    with pytest.raises(
        DataError, match=r"org/math \[test\]: field 'problem': required field is missing \(row 2\)"
    ):
        load_dataset("hf", "org/math", fields=fields)


# ------------------------------------------------------------------------------------ numeric gold answers


@pytest.mark.parametrize("loader", ["jsonl", "csv"])
def test_number_answers_must_be_numbers(tmp_path: Path, loader: str) -> None:
    if loader == "jsonl":
        path = write_jsonl(tmp_path / "q.jsonl", [{"question": "q1", "answer": "1,200"},
                                                 {"question": "q2", "answer": "no hashes here"}])
    else:
        path = tmp_path / "q.csv"
        path.write_text('question,answer\nq1,"$3.50"\nq2,no hashes here\n', encoding="utf-8")
    message = data_error(lambda: load_dataset(loader, path, answer_type="number"))
    where = "q.jsonl:2:" if loader == "jsonl" else "q.csv:3:"  # the CSV header is line 1
    assert where in message and "field 'answer'" in message
    assert "expected a number, got 'no hashes here'" in message
    # The same answers are fine as text.
    assert [e.answer for e in load_dataset(loader, path, answer_type="text")][1] == "no hashes here"


def test_gsm8k_final_answer_must_be_a_number(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "g.jsonl", [gsm_record(), {"question": "q", "answer": "so\n#### lots"}])
    message = data_error(lambda: load_dataset("gsm8k", path, limit=1))
    assert "g.jsonl:2:" in message and "field 'answer'" in message and "'lots'" in message


def test_read_json_names_file_and_line_for_every_fault(tmp_path: Path) -> None:
    """One reader for whole-document JSON files (exemplar sets, sweep.json, ors.json): each fault is one line."""
    from robusteval.data.loaders import read_json
    from robusteval.errors import DataError
    from robusteval.prompts.answer_first import load_exemplars

    good = tmp_path / "good.json"
    good.write_bytes(b"\xef\xbb\xbf" + json.dumps({"a": [1, 2]}).encode())  # a BOM is tolerated
    assert read_json(good) == {"a": [1, 2]}
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "a": 1,\n  "b": \n}\n', encoding="utf-8")
    cases = {broken: "broken.json:4: invalid JSON", tmp_path / "missing.json": "file not found",
             tmp_path: "is a directory"}
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "caf\xe9"}')
    cases[latin] = "latin.json:1: not valid UTF-8"
    for path, expected in cases.items():
        with pytest.raises(DataError) as caught:
            read_json(path)
        assert expected in str(caught.value), str(caught.value)
    with pytest.raises(DataError, match=r"broken\.json:4: invalid JSON"):
        load_exemplars(str(broken))
