"""Measured meaning preservation on every surface (issue 37 item 2): a real robustness run of the tiny NLI
classifier, labels written for some of its edits through the library (some same, some changed, one relabelled),
attached to the run, and each surface checked against a hand count."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers.datafiles import write_ocnli
from helpers.tex import compile_tables
from robusteval.data.spec import DataSpec
from robusteval.evals.prompt_options import PromptOptions
from robusteval.evals.robustness import OUTCOME_STAGE, RobustnessConfig, robustness
from robusteval.evals.robustness.preservation import attach_labels
from robusteval.evals.robustness.results import RESULTS
from robusteval.evals.robustness.results.terminal import print_robustness_tables
from robusteval.metrics.stats import wilson_interval
from robusteval.models import load_backend
from robusteval.models.tiny import tiny_nli_pairs
from robusteval.perturbations.review import Label, LabelStore, edit_key, load_items
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.report.build import build_report
from robusteval.report.compare import compare_runs
from robusteval.report.latex import compare_latex
from robusteval.report.rates import run_rates
from robusteval.runs import load_run
from robusteval.store import RunStore
from robusteval.studies.leaderboard import direction

SETS = ("C-homophone", "C-pinyin")


@pytest.fixture(scope="module")
def labelled_run(tiny_nli_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("preservation")
    data = DataSpec("ocnli", str(write_ocnli(root / "ocnli.json", tiny_nli_pairs(12, seed=5))))
    run = root / "run"
    robustness(RobustnessConfig(data=data, perturbation=PerturbationSpec(), sets=SETS,
                                prompt=PromptOptions(template=str(tiny_nli_dir / "template.json")), seed=0,
                                bootstrap=200),
               load_backend(f"hf:{tiny_nli_dir}"), run)
    items = load_items(run)
    by_method = {name: [item for item in items if item.method == name] for name in SETS}
    # C-homophone: 8 edits labelled, the 3rd and 6th changed; then the 3rd relabelled same (counted once).
    homophone = by_method["C-homophone"][:8]
    pinyin = by_method["C-pinyin"][:4]  # C-pinyin: 4 edits, the last ungrammatical
    first = [Label(i.key, i.method, "changed" if n in (2, 5) else "same", i.original, i.perturbed, i.example_id)
             for n, i in enumerate(homophone)]
    first += [Label(i.key, i.method, "ungrammatical" if n == 3 else "same", i.original, i.perturbed, i.example_id)
              for n, i in enumerate(pinyin)]
    store = LabelStore(root / "labels.jsonl")
    assert store.add(first) == (12, 0)
    again = homophone[2]
    assert store.add([Label(again.key, again.method, "same", again.original, again.perturbed)]) == (0, 1)
    labels = {label.key: label.label for label in first} | {again.key: "same"}
    return {"run": run, "store": store.path, "data": data, "model_dir": tiny_nli_dir, "labels": labels, "edits": {k: len(v) for k, v in by_method.items()},
            "expected": {"C-homophone": (7, 8, 1, 0), "C-pinyin": (3, 4, 0, 1)}}


def _share(k: int, n: int) -> str:
    low, high = wilson_interval(k, n)  # type: ignore[misc]
    return f"same meaning {k}/{n} = {100 * k / n:.0f}% [{100 * low:.0f}, {100 * high:.0f}]"


def _hand_preserved(run: Path, labels: dict[str, str]) -> tuple[dict[str, tuple[int, int, int]], float]:
    """Per set (kept examples, right on their originals, right on the set) and the mean relative drop, counted
    from the stored outcome rows by hand."""
    with RunStore.open_existing(run) as store:
        rows = store.records(OUTCOME_STAGE)
    counts: dict[str, list[int]] = {name: [0, 0, 0] for name in SETS}
    for row in rows:
        keys = [edit_key(f["method"], f["original"], f["perturbed"]) for f in row["fields"].values()
                if f["original"] != f["perturbed"]]
        if keys and all(labels.get(key) == "same" for key in keys):
            block = counts[row["set"]]
            block[0] += 1
            block[1] += bool(row["correct_original"])
            block[2] += bool(row["correct"])
    drops = [(b[1] - b[2]) / b[1] for b in counts.values() if b[0] and b[1]]
    return {k: (v[0], v[1], v[2]) for k, v in counts.items()}, sum(drops) / len(drops)


def test_preservation_attached_counts_and_is_idempotent(labelled_run: dict[str, Any]) -> None:
    run, store = labelled_run["run"], labelled_run["store"]
    summary = attach_labels(run, store, preserved_only=True)
    for name, (same, n, changed, ungrammatical) in labelled_run["expected"].items():
        block = summary["sets"][name]["preservation"]
        assert (block["same"]["k"], block["n"], block["changed"]["k"], block["ungrammatical"]["k"]) == \
            (same, n, changed, ungrammatical)  # the relabelled edit counted once, with its last label
        assert block["n_edits"] == labelled_run["edits"][name] and block["n_unlabelled"] == block["n_edits"] - n
        assert block["same"]["ci95"] == pytest.approx(list(wilson_interval(same, n)))  # type: ignore[arg-type]
    assert summary["preservation_labels"]["n_labelled_edits"] == 12
    text = (run / "summary.json").read_bytes()
    attach_labels(run, store)  # the same labels again: nothing changes (preserved-only kept, recounted)
    assert (run / "summary.json").read_bytes() == text
    # The RB-index over the edits judged the same, against a hand count; the headline RB-index is untouched.
    counts, rb = _hand_preserved(run, labelled_run["labels"])
    block = summary["preserved_only"]
    for name, (kept, right_original, right) in counts.items():
        entry = block["sets"][name]
        assert (entry["n"], entry["acc_original"], entry["acc"]) == (kept, right_original / kept, right / kept)
    assert block["rb_index"] == pytest.approx(rb) and block["label"] == "RB-index over meaning-preserving edits"
    assert block["rb_index_ci95"] is not None and block["rb_index_ci95"][0] < block["rb_index_ci95"][1]
    assert summary["rb_index"] == json.loads(text)["rb_index"]


def test_preservation_on_every_surface(labelled_run: dict[str, Any], tmp_path: Path) -> None:
    run, store = labelled_run["run"], labelled_run["store"]
    homophone, pinyin = _share(7, 8), _share(3, 4)
    # The CLI attaches (perturb labels --run) and says the rates.
    done = subprocess.run([sys.executable, "-m", "robusteval", "perturb", "labels", "--store", str(store),
                           "--run", str(run), "--preserved-only"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert homophone in done.stdout and "RB-index over meaning-preserving edits (n=" in done.stdout
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    # The robustness terminal table: a column beside the accuracy.
    out = io.StringIO()
    print_robustness_tables(summary, label_mode="hard", file=out)
    table = out.getvalue().replace("\n", " ")
    assert "same meaning" in table and "RB-index over meaning-preserving edits (n=" in table
    # runs compare: the CSV row and the terminal.
    record = next(r for board in compare_runs([run]) for r in board.records())
    assert homophone in record["preservation"] and pinyin in record["preservation"]
    assert record["rb_index_preserved"] == pytest.approx(summary["preserved_only"]["rb_index"])
    shown = subprocess.run([sys.executable, "-m", "robusteval", "runs", "compare", str(run), "--format", "csv"],
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and homophone in shown.stdout, shown.stderr
    # LaTeX: compiles, and holds each set's share (without the words, in its own column).
    latex = compare_latex([run])
    assert r"7/8 = 88\% {[}53, 98{]}" in latex and homophone == "same meaning 7/8 = 88% [53, 98]"
    compile_tables(latex, tmp_path)
    # The HTML report's perturbed-benchmark section.
    page = build_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert homophone in page and pinyin in page and "RB-index over meaning-preserving edits" in page
    # The study leaderboard's columns: one per labelled set, read as no score, and the preserved-only RB-index.
    rates = run_rates(load_run(run))
    assert RESULTS.study_extras is not None and RESULTS.study_extras([rates]) == [("same[C-homophone]", "higher"), ("same[C-pinyin]", "higher"),
                                         ("rb_index[preserved]", "lower")]
    same = next(rate for rate in rates if rate.metric == "same[C-homophone]")
    assert (same.num.value, same.num.n, same.denominator) == (7 / 8, 8, "labelled edits")
    assert "no score" in direction("same[C-homophone]", "higher")
    assert direction("rb_index[preserved]", "lower") == "lower is more robust; over the edits labelled same meaning only"


def test_robustness_labels_option_and_rerun_keep_them(labelled_run: dict[str, Any], tmp_path: Path) -> None:
    """``robustness --labels`` counts the same as attaching after; a re-run without it keeps the named store."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(labelled_run["run"], run)
    (run / "summary.json").unlink()
    model_dir = labelled_run["model_dir"]
    config = {"data": labelled_run["data"], "perturbation": PerturbationSpec(), "sets": SETS,
              "prompt": PromptOptions(template=str(model_dir / "template.json")), "seed": 0, "bootstrap": 200}
    model = load_backend(f"hf:{model_dir}")
    with_labels = robustness(RobustnessConfig(**config, labels=str(labelled_run["store"]), preserved_only=True),
                             model, run)
    attached = attach_labels(labelled_run["run"], labelled_run["store"], preserved_only=True, n_resamples=200)
    for name in SETS:
        assert with_labels["sets"][name]["preservation"] == attached["sets"][name]["preservation"]
    assert with_labels["preserved_only"]["rb_index"] == pytest.approx(attached["preserved_only"]["rb_index"])
    again = robustness(RobustnessConfig(**config), model, run)  # resumed: the store its summary named is kept
    assert again["sets"]["C-homophone"]["preservation"]["same"]["k"] == 7 and "preserved_only" in again
    with pytest.raises(Exception, match="preserved_only"):
        RobustnessConfig(**config, preserved_only=True)


def test_preservation_names_the_runs_stage_and_command() -> None:
    import robusteval.evals.robustness as robustness_module
    import robusteval.evals.robustness.preservation as preservation

    assert (preservation.OUTCOME_STAGE, preservation.COMMAND) == (robustness_module.OUTCOME_STAGE,
                                                                  robustness_module.COMMAND)


def test_run_without_labels_shows_none(labelled_run: dict[str, Any]) -> None:
    summary = json.loads((labelled_run["run"] / "summary.json").read_text(encoding="utf-8"))
    bare = {**summary, "sets": {k: {x: y for x, y in v.items() if x != "preservation"}
                                for k, v in summary["sets"].items()}}
    bare.pop("preserved_only")
    out = io.StringIO()
    print_robustness_tables(bare, label_mode="hard", file=out)
    assert "same meaning" not in out.getvalue() and "meaning-preserving" not in out.getvalue()
