"""`variants eval`'s diagnosis on a real tiny model: originals asked in the same call (--originals) or read from
an earlier run (--original-run), the line printed, a known reading made by choosing which answers are right,
and bad original inputs refused in one line before the model loads."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from helpers.runs import cli_inproc, summary
from robusteval.store import write_jsonl_atomic
from robusteval.variants import InstantiateConfig, instantiate
from robusteval.variants.checks import original_instance
from robusteval.variants.template import load_template_file


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example templates' variants (2 per template) and their original problems."""
    root = tmp_path_factory.mktemp("diagnosis")
    templates = str(resources.files("robusteval.variants") / "example_templates.yaml")
    instantiate(InstantiateConfig(templates, n=2, seed=0, out=str(root / "instances.jsonl")))
    originals = [original_instance(t) for t in load_template_file(templates).templates]
    write_jsonl_atomic(root / "originals.jsonl", [o.to_json() for o in originals if o is not None])
    return {"root": root, "instances": root / "instances.jsonl", "originals": root / "originals.jsonl"}


def _eval(model: Path, instances: Path, out: Path, *extra: str) -> Any:
    return cli_inproc("variants", "eval", "--model", f"hf:{model}", "--instances", str(instances), "--out", str(out),
               "--max-new-tokens", "12", *extra)


def _graded(run: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in map(json.loads, (run / "graded.jsonl").read_text("utf-8").splitlines())}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture(scope="module")
def first(tiny_trained_dir: Path, files: dict[str, Path]) -> Path:
    out = files["root"] / "run"
    done = _eval(tiny_trained_dir, files["instances"], out, "--originals", str(files["originals"]))
    assert done.returncode == 0, done.stderr
    (out / "stdout.txt").write_text(done.stdout, encoding="utf-8")
    return out


def test_originals_in_the_same_call(first: Path) -> None:
    stored = summary(first)["diagnosis"]
    assert stored["original_run"] == str(first / "original")
    assert summary(first / "original")["n_instances"] == 3  # a run of its own, resumable, same settings
    assert f"diagnosis: {stored['line']}" in (first / "stdout.txt").read_text("utf-8")
    # Each problem's original is what the original run graded, and its category follows from the grades.
    originals, variants = _graded(first / "original"), _graded(first)
    for row in stored["problems"]:
        assert row["original"] == float(originals[row["problem"]]["correct"])
        right = [v["correct"] for iid, v in variants.items() if iid.startswith(row["problem"] + "_")]
        expected = ("robust" if all(right) else "original_only" if not any(right) else "some_variants") \
            if row["original"] else ("variants_not_original" if all(right) else "unsolved" if not any(right)
                                     else "some_variants")
        assert row["category"] == expected


def test_an_earlier_original_run_gives_the_same_diagnosis(tiny_trained_dir: Path, files: dict[str, Path],
                                                          first: Path) -> None:
    out = files["root"] / "again"
    done = _eval(tiny_trained_dir, files["instances"], out, "--original-run", str(first / "original"))
    assert done.returncode == 0, done.stderr
    mine, theirs = summary(out)["diagnosis"], summary(first)["diagnosis"]
    assert mine["original_run"] == str(first / "original")
    assert {k: v for k, v in mine.items() if k != "original_run"} == \
        {k: v for k, v in theirs.items() if k != "original_run"}
    # Without originals: categorised by the variants only, and the command says how to add them.
    bare = _eval(tiny_trained_dir, files["instances"], files["root"] / "bare")
    assert bare.returncode == 0, bare.stderr
    diagnosis = summary(files["root"] / "bare")["diagnosis"]
    assert diagnosis["n_with_original"] == 0 and all(r["category"].endswith("/no-original")
                                                     for r in diagnosis["problems"])
    assert "--originals FILE asks them in this call" in bare.stdout


def test_a_known_reading_from_chosen_answers(tiny_trained_dir: Path, files: dict[str, Path], first: Path) -> None:
    """The same questions (so the same greedy answers) with gold answers chosen from what the model said: the
    first problem right on its original and both variants, the second on its original only, the third wrong
    (the tiny model writes no number for the ladder questions)."""
    said = {iid: row["extracted"] for iid, row in {**_graded(first), **_graded(first / "original")}.items()}
    problems = [row["id"] for row in _rows(files["originals"])]
    assert problems[2] == "ladder" and not any(v for k, v in said.items() if k.startswith("ladder"))
    right = {problems[0], f"{problems[0]}_0", f"{problems[0]}_1", problems[1]}
    assert all(said[iid] for iid in right)

    def chosen(path: Path) -> list[dict[str, Any]]:
        return [{**row, "answer": said[row["id"]] if row["id"] in right else "-987654"} for row in _rows(path)]

    root = files["root"] / "chosen"
    write_jsonl_atomic(root / "originals.jsonl", chosen(files["originals"]))
    write_jsonl_atomic(root / "instances.jsonl", chosen(files["instances"]))
    done = _eval(tiny_trained_dir, root / "instances.jsonl", root / "run", "--originals", str(root / "originals.jsonl"))
    assert done.returncode == 0, done.stderr
    diagnosis = summary(root / "run")["diagnosis"]
    assert [r["category"] for r in diagnosis["problems"]] == ["robust", "original_only", "unsolved"]
    # original 66.7% -> loose 33.3% -> strict 33.3%: the whole drop is lost already on single variants.
    assert diagnosis["label"] == "memorisation"
    line = diagnosis["line"]
    assert line.startswith("mostly memorisation: original 66.7% -> loose 33.3% -> strict 33.3% on 3 problems")
    assert f"diagnosis: {line}" in done.stdout and "strict drop 50.0% relative" in line


def test_bad_originals_are_one_line_before_the_model_loads(tiny_trained_dir: Path, files: dict[str, Path],
                                                            first: Path, tmp_path: Path) -> None:
    # One line on stderr: no "loading hf:..." before it, the model was never loaded.
    for extra, expected in (
        (("--original-run", str(first)), "not a run on the original problems"),
        (("--original-run", str(tmp_path)), str(tmp_path)),
        (("--originals", str(files["instances"])), "is a variant's (<problem>_<j>)"),
        (("--originals", str(files["originals"]), "--original-run", str(first / "original")),
         "give either --originals or --original-run, not both"),
    ):
        done = _eval(tiny_trained_dir, files["instances"], tmp_path / "out", *extra)
        assert done.returncode == 2, done.stderr
        assert not (tmp_path / "out").exists()
        assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
