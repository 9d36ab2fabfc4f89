"""The HTML report built from real tiny-model runs of every method: each number the page shows is the one in
the run's summary.json (or sweep.json, ors.json), every section is there, run text is escaped, and bad input
is one line with exit code 2."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.reportpage import Page
from helpers.runs import cli_inproc, summary
from robusteval.errors import UserError
from robusteval.runs import load_run


@pytest.fixture(scope="module")
def page(all_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Page:
    out = rv.report(list(all_runs.values()), out=tmp_path_factory.mktemp("report") / "report.html")
    return Page(out.read_text(encoding="utf-8"))


def test_every_section_is_there(page: Page) -> None:
    assert page.sections == ["matcha", "varmath", "robustness", "hardlabel", "compare"]


def test_matcha_numbers_are_the_summary_numbers(page: Page, all_runs: dict[str, Path]) -> None:
    run = all_runs["matcha"]
    stored = summary(run)
    assert {stored[k] for k in ("acc", "ur", "sr", "wr")} <= page.values_from(run)
    assert {stored[k] for k in ("ur", "sr", "wr")} <= set(page.marks)  # the outcome chart
    tips = [tip for value, tip in page.cells if value == stored["sr"] and f"run: {run}" in tip]
    assert any(f"n = {stored['n_attacked']}" in tip and "95% CI" in tip for tip in tips)
    # Table 3: the baseline beside the full attack, mean over the sweep's two seeds as sweep.json has it.
    table = json.loads((all_runs["sweep"] / "sweep.json").read_text("utf-8"))["table"]
    means = {row["ur"]["mean"] for row in table} | {row["sr"]["mean"] for row in table}
    assert means <= {value for value, tip in page.cells if "2 run(s), seeds 0, 1" in tip}


def test_the_example_browser_shows_every_question(page: Page, all_runs: dict[str, Path]) -> None:
    records = load_run(all_runs["matcha"]).records("matcha_outcome")
    attacked = [r for r in records if r["attacked"]]
    items = page.data["matcha-examples"]
    shown = {i["filters"]["outcome"] for i in items}
    # arith gives no verdict on a reasoning without an equation: such examples are browsable as unjudged.
    assert len(items) == len(records) and {"SR", "WR"} <= shown <= {
        "UR", "SR", "WR", "unjudged", "clean reasoning already wrong", "not attacked"}
    assert sum(1 for i in items if i["filters"]["outcome"] == "unjudged") == sum(
        1 for r in attacked if r["outcome"] == "unjudged")
    assert sum(1 for i in items if i["filters"]["outcome"] == "not attacked") == len(records) - len(attacked)
    success = next(r for r in attacked if r["outcome"] == "success")
    item = next(i for i in items if i["filters"]["outcome"] == "SR")
    assert item["title"].startswith(success["id"])
    # The perturbed question carries the attack's edit spans; the false equation is marked in the reasoning.
    question = item["blocks"][0]["pair"][1][1]
    assert question["t"] == success["perturbed_question"]
    assert [m[:2] for m in question["m"]] == [[e["start"], e["end"]] for e in success["edits"]]
    reasoning = item["blocks"][2]["pair"][1][1]
    flagged = [reasoning["t"][m[0]:m[1]] for m in reasoning["m"]]
    assert flagged and all("=" in text for text in flagged)
    rows = dict(item["blocks"][3]["rows"])
    assert rows["reasoning judge: raw output"] == success["reasoning"]["raw"]


def test_varmath_robustness_and_hardlabel_numbers(page: Page, all_runs: dict[str, Path]) -> None:
    for name in ("variants", "original", "variants-other"):
        stored = summary(all_runs[name])
        assert {stored["strict"], stored["loose"]} <= page.values_from(all_runs[name])
    robust = summary(all_runs["robustness"])
    assert {robust["acc_original"], robust["rb_index"], *robust["acc"].values()} <= page.values_from(
        all_runs["robustness"])
    for method in ("C-homophone", "C-pinyin"):
        stored = summary(all_runs[f"wi-{method}"])
        assert set(stored["asr_by_rate"].values()) <= page.values_from(all_runs[f"wi-{method}"])
        assert set(stored["asr_by_rate"].values()) <= set(page.marks)
    ors = json.loads((all_runs["ors"] / "ors.json").read_text("utf-8"))
    # The ORS table: each model's score from ors.json, each rs from the attack run it was computed from.
    assert set(ors["ors"].values()) == page.values_from(all_runs["ors"] / "ors.json", table="ORS (β")
    for model, by_method in ors["rs"].items():
        for method, value in by_method.items():
            assert value in page.values_from(Path(ors["runs"][model][method]), table="ORS (β")


def test_robustness_examples_hold_both_labels(page: Page, all_runs: dict[str, Path]) -> None:
    run = load_run(all_runs["robustness"])
    rows = run.records("robustness_outcome")
    for name, entry in run.summary["sets"].items():
        assert sum(r["correct"] for r in rows if r["set"] == name) == entry["n_correct"]
    items = page.data["robustness-examples"]
    assert len(items) == sum(r["changed"] for r in rows) > 0
    edited = next(i for i in items if any("pair" in b and b["pair"][1][1].get("m") for b in i["blocks"]))
    pair = next(b["pair"] for b in edited["blocks"] if "pair" in b and b["pair"][1][1].get("m"))
    for mark in pair[1][1]["m"]:  # each marked span of the perturbed text is that edit's replacement
        assert mark[3].split("→ '")[1].rstrip("'") == pair[1][1]["t"][mark[0]:mark[1]]


def test_leaderboards_agree_with_runs_compare_csv(all_runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "board.csv"
    done = cli_inproc("runs", "compare", *map(str, all_runs.values()), "--format", "csv", "--output", str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    varmath = [r for r in rows if r["method"] == "variants" and r["instances"] == "instances.jsonl"]
    assert len({r["model"] for r in varmath}) == len(varmath) == 2  # two models, told apart by their folders
    for row in varmath:
        assert float(row["strict"]) == summary(Path(row["run"]))["strict"]
        # Three example problems are too few to rank by default: shown, with the reason.
        assert (row["rank"], row["unranked_because"]) == ("-", "n_problems = 3 < 10")
    done = cli_inproc("runs", "compare", *map(str, all_runs.values()), "--format", "csv", "--output", str(out),
               "--min-n", "1", "--max-interval-width", "1")
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    varmath = [r for r in rows if r["method"] == "variants" and r["instances"] == "instances.jsonl"]
    best = min(varmath, key=lambda r: int(r["rank"]))
    assert float(best["strict"]) == max(float(r["strict"]) for r in varmath)
    table = cli_inproc("runs", "compare", *map(str, all_runs.values()))
    assert table.returncode == 0 and "VAR-MATH: higher strict score ranks first" in table.stdout
    latex = cli_inproc("runs", "compare", *map(str, all_runs.values()), "--format", "latex")
    assert latex.returncode == 0, latex.stderr
    # The paper layout a table follows is for robusteval's reader: a % comment, never in a caption.
    comments = [line for line in latex.stdout.splitlines() if line.startswith("%")]
    captions = [line for line in latex.stdout.splitlines() if line.startswith("\\caption")]
    assert any("paper Table 1 layout" in c for c in comments) and any("paper Table 3 layout" in c for c in comments)
    assert captions and not any("layout" in c for c in captions)
    assert latex.stdout.count(r"\begin{tabular}") == latex.stdout.count(r"\bottomrule") >= 6


def test_run_text_is_escaped(tmp_path: Path) -> None:
    from helpers.reportstores import matcha_store

    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    run = matcha_store(tmp_path / "hostile", 3, text=hostile)
    text = rv.report([run], out=tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script>alert" not in text and "<img src=x" not in text
    items = Page(text).data["matcha-examples"]
    assert hostile in items[0]["blocks"][0]["pair"][0][1]["t"]  # shown as text, unchanged


def test_rv_report_works_whichever_is_imported_first(llm_runs: dict[str, Path], tmp_path: Path) -> None:
    code = ("import sys, robusteval.report.tables, robusteval as rv; "
            f"p = rv.report([{str(llm_runs['original'])!r}], out={str(tmp_path / 'r.html')!r}); "
            "print(p.exists(), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "False"], done.stderr


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "results.sqlite").write_bytes(b"not a database" * 100)
    # sweep.json and ors.json that parse but have the wrong shape: a DataError naming the field.
    bad_sweep = tmp_path / "bad-sweep"
    bad_sweep.mkdir()
    (bad_sweep / "sweep.json").write_text(json.dumps({"table": [], "runs": ["x"]}), encoding="utf-8")
    bad_ors = tmp_path / "bad-ors"
    bad_ors.mkdir()
    (bad_ors / "ors.json").write_text(json.dumps({"rates": [], "success_percent": {}, "ors": [1, 2]}),
                                      encoding="utf-8")
    for args, expected in (([str(tmp_path / "missing")], "no such directory"),
                           ([str(empty)], "not a run directory"), ([str(damaged)], str(damaged)),
                           ([str(bad_sweep)], "field 'runs[0]': expected an object, got string"),
                           ([str(bad_ors)], "field 'ors': expected an object, got array")):
        done = cli_inproc("report", *args, "--out", str(tmp_path / "r.html"))
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "r.html").exists()
    with pytest.raises(UserError, match="at least one"):
        rv.report([], out=tmp_path / "r.html")


@pytest.mark.parametrize(("name", "data", "field"), [
    ("sweep.json", {"table": [], "runs": ["x"]}, "runs[0]"),
    ("sweep.json", {"table": {}, "runs": []}, "table"),
    ("sweep.json", {"table": [{"point": [1]}], "runs": []}, "table[0].point"),
    ("sweep.json", {"table": [{"ur": {"mean": "high"}}], "runs": []}, "table[0].ur.mean"),
    ("sweep.json", {"table": [], "runs": [{"run_dir": 3}]}, "runs[0].run_dir"),
    ("sweep.json", {"grid": {"steps": 3}, "table": [], "runs": []}, "grid.steps"),
    ("sweep.json", {"table": []}, "runs"),
    ("ors.json", {"rates": [], "success_percent": {}, "ors": [1, 2]}, "ors"),
    ("ors.json", {"rates": [], "success_percent": {}, "ors": {"m": "best"}}, "ors.m"),
    ("ors.json", {"rates": {}, "success_percent": {}, "ors": {}}, "rates"),
    ("ors.json", {"rates": [], "success_percent": {"m": [1]}, "ors": {}}, "success_percent.m"),
    ("ors.json", {"rates": [], "success_percent": {}, "ors": {}, "rs": {"m": {"C-x": "1"}}}, "rs.m.C-x"),
    ("ors.json", {"rates": [], "success_percent": {}, "ors": {}, "runs": {"m": []}}, "runs.m"),
])
def test_malformed_sweep_and_ors_name_the_field(tmp_path: Path, name: str, data: dict[str, Any], field: str
                                                ) -> None:
    from robusteval.errors import DataError
    from robusteval.report.collect import collect

    (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError, match=f"field '{re.escape(field)}'") as caught:
        collect([tmp_path])
    assert str(tmp_path / name) in str(caught.value)


def test_a_sweep_row_without_the_grid_value_is_left_out_of_the_curve(tmp_path: Path) -> None:
    stat = {"mean": 0.5, "std": 0.1}
    rows = [{"model": "m", "point": {"steps": 1}, "n_seeds": 2, "ur": stat, "sr": stat},
            {"model": "m", "point": {}, "n_seeds": 2, "ur": stat, "sr": stat}]
    data = {"attack": "matcha", "grid": {"steps": [1, 3]}, "seeds": [0, 1], "models": ["m"], "table": rows,
            "runs": []}
    (tmp_path / "sweep.json").write_text(json.dumps(data), encoding="utf-8")
    page = Page(rv.report([tmp_path], out=tmp_path / "r.html").read_text(encoding="utf-8"))
    assert page.marks == [0.5, 0.5]  # UR and SR at steps = 1; the row without steps is only in the table


def test_every_leaderboard_number_is_a_section_table_number(all_runs: dict[str, Path]) -> None:
    """The leaderboards call the section builders: each of their numbers (value, n, interval, run, note) is one
    a section's table shows, so the two can never disagree."""
    from robusteval.report.build import sections
    from robusteval.report.collect import collect
    from robusteval.report.compare import leaderboards
    from robusteval.report.model import Num, Table

    inputs = collect(list(all_runs.values()))
    shown = [cell for section in sections(inputs) if section.id != "compare" for block in section.blocks
             if isinstance(block, Table) for row in block.rows for cell in row if isinstance(cell, Num)]
    boards = leaderboards(inputs)
    assert {b.method for b in boards} == {"matcha", "transfer", "variants", "robustness", "wordimportance", "ors"}
    for board in boards:
        for row in board.rows:
            for column, cell in row.items():
                if isinstance(cell, Num) and cell.value is not None:
                    assert cell in shown, (board.method, column, cell)


def test_a_bad_out_is_refused_before_any_run_is_read(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-run"  # collecting it would fail: --out is checked first
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    for out, expected in ((tmp_path, "is a directory"), (blocker / "r.html", f"{blocker} is not a directory"),
                          (blocker / "deeper" / "r.html", f"{blocker} is not a directory")):
        with pytest.raises(UserError, match=f"--out {re.escape(str(out))}: {re.escape(expected)}"):
            rv.report([missing], out=out)
    done = cli_inproc("report", str(missing), "--out", str(blocker / "r.html"))
    assert done.returncode == 2 and "is not a directory" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_an_out_in_a_directory_without_write_permission_is_refused(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import robusteval.report.build as build

    monkeypatch.setattr(build.os, "access", lambda path, mode: False)  # as a non-root user in a 0o555 folder
    with pytest.raises(UserError, match=r"cannot write in .* \(permission denied\)"):
        rv.report([tmp_path / "no-such-run"], out=tmp_path / "new" / "r.html")
