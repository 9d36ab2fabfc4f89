"""The study leaderboard's MATCHA columns: the printed "more robust" direction of each headline (WR included),
the pairwise tests between models, models in the study file's order, flagged cells marked ⚑ (printed rows, column notes, leaderboard.json, CSV), both
denominators under the authors' counting, and cells of different countings said to be not comparable.

The cells are real MATCHA run directories (``helpers.reportstores.matcha_store``) at the paths a study gives
them, so the leaderboard reads them as it reads a study's; no model is loaded."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import robusteval as rv
from helpers.reportpage import Page
from helpers.reportstores import DETERMINISTIC, UNGATED, authors_summary, denominator, matcha_store
from helpers.studies import MATH
from robusteval.report.html import section_html
from robusteval.report.tables import print_summary_table
from robusteval.studies.leaderboard import CSV_NAME, JSON_NAME, StudyLeaderboard, build_leaderboard
from robusteval.studies.page import leaderboard_section
from robusteval.studies.plan import StudyPlan, run_dir
from robusteval.studies.study import CellResult

#: Not in alphabetical order: the leaderboard keeps the study file's.
MODELS = ("zeta", "alpha", "mu")


def _plan() -> StudyPlan:
    return rv.load_study({"models": [{"spec": f"hf:/nowhere/{m}", "name": m} for m in MODELS],
                          "datasets": {"math": {"dataset": "jsonl", "data_file": MATH, "limit": 4}},
                          "methods": {"matcha": {"datasets": ["math"]}}})


def _board(root: Path, summaries: dict[str, dict[str, Any]], kinds: dict[str, list[str]]) -> StudyLeaderboard:
    """The leaderboard of a one-method study whose cells hold MATCHA runs of ``kinds`` with ``summaries``' keys."""
    plan = _plan()
    results = []
    for i, cell in enumerate(plan.cells):
        model = cell.model.name
        out = matcha_store(run_dir(root, cell), len(kinds[model]), kinds=kinds[model], model_name=f"hf:{model}",
                           seed=i, summary=summaries.get(model))
        results.append(CellResult(cell.id, str(out), "done"))
    return build_leaderboard(plan, root, results)


def _printed(board: StudyLeaderboard) -> str:
    rows, columns = board.rows()
    out = io.StringIO()
    print_summary_table("study leaderboard", rows, columns, file=out)
    return out.getvalue()


KINDS = {"zeta": ["unsuccessful"] * 6 + ["success"] * 4,  # UR 60 %, SR 40 %
         "alpha": ["unsuccessful"] * 9 + ["success"] * 1,  # UR 90 %, SR 10 %
         "mu": ["unsuccessful"] * 3 + ["success"] * 5 + ["wrong"] * 2}  # UR 30 %, SR 50 %


def test_each_headline_prints_its_direction_and_the_models_keep_the_file_order(tmp_path: Path) -> None:
    board = _board(tmp_path, {}, KINDS)
    rows, columns = board.rows()
    assert columns == ["metric", *MODELS]
    # SR: a broken reasoning with the answer kept is the attack's success, lower is more robust; UR higher.
    # WR: the insertions changed the answer, lower is more robust.
    assert [row["metric"] for row in rows] == ["matcha · math · sr (lower is more robust)",
                                               "matcha · math · ur (higher is more robust)",
                                               "matcha · math · wr (lower is more robust)"]
    assert [(c.name, c.better) for c in board.columns] == [("matcha:math:sr", "lower"), ("matcha:math:ur", "higher"),
                                                           ("matcha:math:wr", "lower")]
    assert [rows[1][m].split(" ")[0] for m in MODELS] == ["60.0", "90.0", "30.0"]
    assert [rows[2][m].split(" ")[0] for m in MODELS] == ["0.0", "0.0", "20.0"]
    saved = json.loads((tmp_path / JSON_NAME).read_text(encoding="utf-8"))
    assert [(c["name"], c["better"]) for c in saved["columns"]] == [("matcha:math:sr", "lower"),
                                                                    ("matcha:math:ur", "higher"),
                                                                    ("matcha:math:wr", "lower")]
    # Every pair tested on UR by McNemar over the same 10 rated questions: (b, c) and the exact p by hand.
    ur = {(p["model_a"], p["model_b"]): p for p in saved["pairwise"] if p["column"] == "matcha:math:ur"}
    assert {pair: (p["test"], p["discordant"], p["p"]) for pair, p in ur.items()} == {
        ("zeta", "alpha"): ("McNemar exact", [0, 3], 2 / 8), ("zeta", "mu"): ("McNemar exact", [3, 0], 2 / 8),
        ("alpha", "mu"): ("McNemar exact", [6, 0], 2 / 64)}
    assert saved["models"] == list(MODELS)
    printed = _printed(board)
    assert "sr (lower is more robust)" in printed and "ur (higher is more robust)" in printed
    assert "⚑" not in printed  # no run is flagged


def test_flagged_cells_are_marked_everywhere_the_leaderboard_is_written(tmp_path: Path) -> None:
    board = _board(tmp_path, {"alpha": {"flags": [DETERMINISTIC, UNGATED]}, "mu": {"flags": [UNGATED]}}, KINDS)
    rows, _ = board.rows()
    ur = rows[1]
    assert ur["zeta"].startswith("60.0 % [") and "⚑" not in ur["zeta"]
    assert ur["alpha"].startswith("90.0 % [") and "] ⚑ n_attacked=10" in ur["alpha"]
    assert "] ⚑ n_attacked=10" in ur["mu"]
    note = {c.name: c.note for c in board.columns}["matcha:math:ur"]
    assert note == ("⚑ alpha: reasoning judged by deterministic checkers only (arith); "
                    "⚑ alpha, mu: semantic gate: none (edits unchecked)")
    cells = {(c["model"], c["column"]): c for c in json.loads((tmp_path / JSON_NAME).read_text())["cells"]}
    assert cells[("alpha", "matcha:math:sr")]["flags"] == [DETERMINISTIC["text"], UNGATED["text"]]
    assert cells[("zeta", "matcha:math:sr")]["flags"] == []
    records = {r["model"]: r for r in csv.DictReader((tmp_path / CSV_NAME).open(encoding="utf-8"))}
    assert records["mu"]["matcha:math:ur_flags"] == UNGATED["text"] and records["zeta"]["matcha:math:ur_flags"] == ""
    # The study report's leaderboard carries the same flags, cell by cell, as the CSV.
    page = Page(section_html(leaderboard_section(board)))
    [first] = [caption for caption in page.captions if caption.startswith("Study leaderboard")]
    shown = {(column, model): text for column, row in zip([c.name for c in board.columns], page.rows[first],
                                                           strict=True)
             for model, text in zip(MODELS, row[2:], strict=True)}
    for model in MODELS:
        for column in ("matcha:math:sr", "matcha:math:ur"):
            flags = [f for f in records[model][f"{column}_flags"].split("; ") if f]
            assert all(f"⚑ {flag}" in shown[(column, model)] for flag in flags), (model, column)
            assert shown[(column, model)].count("⚑") == len(flags), (model, column)


def test_authors_counting_gives_both_denominators_and_is_not_comparable_with_ours(tmp_path: Path) -> None:
    ours = denominator(9, 1, 0, "every attacked example with a clean reasoning after the answer")
    authors = denominator(9, 3, 0, "every clean-correct question (the authors' code)")
    board = _board(tmp_path, {"alpha": authors_summary(ours, authors)}, KINDS)
    names = [c.name for c in board.columns]
    assert names == ["matcha:math:sr", "matcha:math:sr@ours", "matcha:math:ur", "matcha:math:ur@ours",
                     "matcha:math:wr", "matcha:math:wr@ours"]
    assert [c.better for c in board.columns] == ["lower", "lower", "higher", "higher", "lower", "lower"]
    rows = {row["metric"]: row for row in board.rows()[0]}
    assert rows["matcha · math · ur (higher is more robust)"]["alpha"].startswith("75.0 % [")
    assert rows["matcha · math · ur (higher is more robust)"]["alpha"].endswith("n_attacked (authors')=12")
    assert rows["matcha · math · ur@ours (higher is more robust)"]["alpha"].endswith("n_attacked (ours)=10")
    assert rows["matcha · math · ur@ours (higher is more robust)"]["zeta"] == "-"
    # alpha counted by the authors' rules: its cells are not comparable with the others'.
    column = {c.name: c for c in board.columns}["matcha:math:ur"]
    assert column.comparability == "" and "config.counting=" in column.note
    # ... and never tested against them; the two counted by ours are.
    tests = {(c.model_a, c.model_b): c.test for c in board.comparisons if c.column == "matcha:math:ur"}
    assert tests[("zeta", "alpha")].status == "not tested" and "not comparable" in tests[("zeta", "alpha")].note
    assert tests[("zeta", "mu")].status == "tested"


def test_unjudged_kept_answers_do_not_inflate_the_leaderboard_s_wr(tmp_path: Path) -> None:
    # Issue 34: one model attacked 20 questions, 14 answers changed, 6 kept but unjudged. Its WR is 14/20 = 70 %
    # over every attacked question (not 100 % of the 14 judged), its unjudged share has a column, and its cells
    # say they hold unjudged answers; its categories add up to its n on every surface the leaderboard writes.
    kinds = {**KINDS, "alpha": ["wrong"] * 14 + ["unjudged"] * 6}
    board = _board(tmp_path, {}, kinds)
    names = [c.name for c in board.columns]
    assert names == ["matcha:math:sr", "matcha:math:ur", "matcha:math:wr", "matcha:math:unjudged_rate"]
    rows = {row["metric"]: row for row in board.rows()[0]}
    wr = rows["matcha · math · wr (lower is more robust)"]["alpha"]
    assert wr.startswith("70.0 % [48.1, 85.5] ⚑") and wr.endswith("n_attacked=20")
    unjudged = rows["matcha · math · unjudged_rate (share of the attacked, no score)"]
    assert unjudged["alpha"].startswith("30.0 % [14.5, 51.9]") and unjudged["zeta"].startswith("0.0 % [")
    cells = {(c["model"], c["column"]): c for c in json.loads((tmp_path / JSON_NAME).read_text())["cells"]}
    alpha = {name: cells[("alpha", name)] for name in names}
    assert {name: (cell["n"], cell["denominator"]) for name, cell in alpha.items()} == dict.fromkeys(
        names, (20, "n_attacked"))
    assert round(sum(cell["value"] * cell["n"] for cell in alpha.values())) == 20  # the categories sum to n
    assert alpha["matcha:math:wr"]["ci95"][0] < 0.7 < alpha["matcha:math:wr"]["ci95"][1]
    assert any("6 of 20 unjudged" in flag for flag in alpha["matcha:math:wr"]["flags"])
    records = {r["model"]: r for r in csv.DictReader((tmp_path / CSV_NAME).open(encoding="utf-8"))}
    assert (records["alpha"]["matcha:math:wr"], records["alpha"]["matcha:math:wr_n"]) == ("0.7", "20")
    assert records["alpha"]["matcha:math:unjudged_rate"] == "0.3"
    assert "6 of 20 unjudged" in records["alpha"]["matcha:math:wr_flags"]
    printed = _printed(board)
    assert "70.0 % [48.1, 85.5]" in printed and "100.0 %" not in printed
