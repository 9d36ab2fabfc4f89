"""Issue 26 on every surface that shows a MATCHA summary: the counting, the flags (a deterministic-only reasoning
judge, no semantic gate) as a visible ⚑ beside the rates, the examples the reasoning judge did not decide, and,
under the authors' counting, both denominators each with its n and interval: the attack's terminal table,
``runs show``, ``runs compare`` (terminal, CSV), ``results_frame`` and the HTML report. Runs of different
countings are never ranked together."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.reportpage import Page
from helpers.reportstores import DETERMINISTIC, UNGATED, authors_summary, denominator, matcha_store
from helpers.runs import cli
from helpers.shared import needs_modules
from robusteval.attacks.matcha.attack import MatchaAttack
from robusteval.report.tables import print_exclusions, print_flags, print_summary_table

#: 12 attacked questions: ours rates 10 of them (9 kept, 1 broken; 2 clean reasonings judged wrong), the
#: authors' 12 (9 kept, 3 broken).
OURS = denominator(9, 1, 0, "attacked, clean reasoning not judged wrong, reasoning present")
AUTHORS = denominator(9, 3, 0, "every clean-correct question with an outcome (the authors' code)")
UNJUDGED = {"n_unjudged": 3, "unjudged_reasons": {"no equation to check": 2, "unreadable verdict after 3 asks": 1}}
KINDS = ["unsuccessful"] * 9 + ["success"] + ["clean_cot_wrong"] * 2


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("counting")
    flagged = {"flags": [DETERMINISTIC, UNGATED], **UNJUDGED}
    return {
        "ours-plain": matcha_store(root / "plain", 12, kinds=KINDS, model_name="hf:ours-plain", seed=0),
        "ours-flagged": matcha_store(root / "flagged", 12, kinds=KINDS, model_name="hf:ours-flagged", seed=1,
                                     summary={"counting": "ours", **flagged}),
        "authors-a": matcha_store(root / "authors-a", 12, kinds=KINDS, model_name="hf:authors-a", seed=2,
                                  summary={**authors_summary(OURS, AUTHORS), **flagged}),
        "authors-b": matcha_store(root / "authors-b", 12, kinds=KINDS, model_name="hf:authors-b", seed=3,
                                  summary=authors_summary(OURS, denominator(8, 4, 0, AUTHORS["definition"]))),
    }


def _summary(**keys: Any) -> dict[str, Any]:
    """A summary as the pipeline returns it to the attack command (the fields its table reads)."""
    return {"model": "hf:m", "dataset": "gsm8k", "level": "token", "variant": "full", "target_answer": "clean",
            "judges": {"reasoning": "arith", "semantic": "none"}, "n": 12, "n_correct": 12, "acc": 1.0,
            "n_attacked": 12, "n_rated": 10, "ur": 0.9, "sr": 0.1, "wr": 0.0,
            "ci95": {"acc": [0.757, 1.0], **OURS["ci95"]}, "skip_reasons": {}, "exclusions": {}, **keys}


def _printed(summary: dict[str, Any]) -> list[str]:
    out = io.StringIO()
    title, rows, columns = MatchaAttack().table(summary)
    print_summary_table(title, rows, columns, file=out)
    print_flags(summary, file=out)
    print_exclusions(summary, file=out)
    return out.getvalue().splitlines()


def test_the_attack_table_of_an_old_run_is_unflagged_and_counts_ours() -> None:
    lines = _printed(_summary())
    assert lines[0].startswith("MATCHA token-level (full), counting: ours, target answer: clean")
    assert not any("⚑" in line or "rates over" in line or "n_unjudged" in line for line in lines)


def test_the_attack_table_flags_rates_and_shows_both_denominators() -> None:
    summary = _summary(**authors_summary(OURS, AUTHORS), flags=[DETERMINISTIC, UNGATED], **UNJUDGED)
    _, rows, columns = MatchaAttack().table(summary)
    assert columns == ["model", "dataset", "n", "n_correct", "acc", "n_attacked", "n_rated", "ur", "sr", "wr",
                       "n_unjudged"]
    # The headline row (the authors' denominator, n = 12), then ours (n = 10): each rate with its interval, ⚑.
    assert [(row["n_rated"], row["ur"], row["sr"]) for row in rows] == [
        ("12 authors'", "0.750 [0.468, 0.911] ⚑", "0.250 [0.089, 0.532] ⚑"),
        ("10 ours", "0.900 [0.596, 0.982] ⚑", "0.100 [0.018, 0.404] ⚑")]
    assert rows[0]["acc"] == "1.000 [0.500, 1.000]" and rows[1]["acc"] == ""  # ACC is not the judge's: unflagged
    assert (rows[0]["n_unjudged"], rows[1]["n_unjudged"]) == (3, "")
    lines = _printed(summary)
    assert lines[0].startswith("MATCHA token-level (full), counting: authors, target answer: clean")
    assert lines[1] == ("rates over authors' n_rated (the headline): every clean-correct question with an "
                        "outcome (the authors' code)")
    assert lines[2] == "rates over ours n_rated: attacked, clean reasoning not judged wrong, reasoning present"
    table = "\n".join(lines[3:-3])
    assert "12 authors'" in table and "10 ours" in table and table.count("⚑") == 6
    assert lines[-3:] == ["⚑ reasoning judged by deterministic checkers only (arith)",
                          "⚑ semantic gate: none (edits unchecked)",
                          "left out of every rate, answer kept but the reasoning judge abstained: 3 (no equation to "
                          "check 2, unreadable verdict after 3 asks 1)"]


def test_runs_of_different_countings_are_never_ranked_together(runs: dict[str, Path]) -> None:
    boards = rv.compare_runs(list(runs.values()), max_width=1.0)
    assert [sorted(board.models) for board in boards] == [["ours-flagged", "ours-plain"], ["authors-a", "authors-b"]]
    assert "config.counting=ours" in boards[0].apart and "config.counting=authors" in boards[1].apart
    assert all(row["counting"] == ("authors" if "authors" in board.apart else "ours")
               for board in boards for row in board.rows)
    ours, authors = boards
    assert "ur_ours" not in ours.shown and "flags" in ours.shown and "n_unjudged" in ours.shown
    assert {row["model"]: row["flags"] for row in ours.rows} == {
        "ours-plain": "", "ours-flagged": "⚑ reasoning judged by deterministic checkers only (arith); "
                                          "⚑ semantic gate: none (edits unchecked)"}
    # The authors' group ranks by the headline (authors') UR, and shows ours beside it with its own n.
    assert [row["model"] for row in authors.rows] == ["authors-a", "authors-b"]
    a = authors.rows[0]
    assert (a["n_rated"], a["ur"].value, a["ur"].n) == ("12", 0.75, 12)  # type: ignore[union-attr]
    assert (a["n_rated_ours"], a["ur_ours"].value, a["ur_ours"].n) == ("10", 0.9, 10)  # type: ignore[union-attr]
    assert a["ur_ours"].ci == OURS["ci95"]["ur"] and a["ur"].flags and not authors.rows[1]["ur"].flags  # type: ignore[union-attr]


def test_runs_compare_prints_and_writes_the_flags_and_both_denominators(runs: dict[str, Path], tmp_path: Path
                                                                        ) -> None:
    done = cli("runs", "compare", *map(str, runs.values()), "--max-interval-width", "1")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "(comparable group 1 of 2)" in text and "config.counting=authors" in text
    assert ("ours-flagged: ⚑ reasoning judged by deterministic checkers only (arith); ⚑ semantic gate: none "
            "(edits unchecked)") in text.splitlines() and "] ⚑" in text and "ours-plain: " not in text
    assert "the same runs over our denominator (counting: authors" in text and "UR % (ours)" in text
    assert "⚑: a flagged rate" in text
    out = tmp_path / "board.csv"
    assert cli("runs", "compare", *map(str, runs.values()), "--format", "csv", "--output", str(out)).returncode == 0
    rows = {row["model"]: row for row in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["ours-flagged"]["flags"].startswith("⚑ reasoning judged") and rows["ours-plain"]["flags"] == ""
    assert (rows["ours-flagged"]["n_unjudged"], rows["ours-plain"]["n_unjudged"]) == ("3", "0")
    a = rows["authors-a"]
    assert (a["counting"], a["ur"], a["ur_n"], a["ur_ours"], a["ur_ours_n"]) == ("authors", "0.75", "12", "0.9", "10")
    assert float(a["ur_ours_ci_low"]) == pytest.approx(OURS["ci95"]["ur"][0])
    assert rows["ours-plain"]["group"] != a["group"]


def test_runs_show_marks_flagged_rates_and_gives_both_denominators(runs: dict[str, Path]) -> None:
    shown = json.loads(cli("runs", "show", str(runs["authors-a"]), "--json").stdout)
    assert shown["counting"] == "authors"
    assert shown["flags"] == ["⚑ reasoning judged by deterministic checkers only (arith)",
                              "⚑ semantic gate: none (edits unchecked)"]
    flags = "(reasoning judged by deterministic checkers only (arith); semantic gate: none (edits unchecked))"
    assert shown["rates"]["ur"] == f"75.0 % [46.8, 91.1] ⚑, n_rated (authors') = 12 {flags}"
    assert shown["rates"]["ur[ours]"] == f"90.0 % [59.6, 98.2] ⚑, n_rated (ours) = 10 {flags}"
    assert shown["rates"]["acc"].endswith(", n = 12")
    assert shown["left_out"]["n_unjudged"] == 3
    plain = json.loads(cli("runs", "show", str(runs["ours-plain"]), "--json").stdout)
    assert (plain["counting"], plain["flags"]) == ("ours", [])
    assert plain["rates"]["ur"] == "90.0 % [59.6, 98.2], n_rated = 10"


@needs_modules("pandas")
def test_results_frame_has_both_denominators_flags_and_counting(runs: dict[str, Path]) -> None:
    frame = rv.results_frame([runs["authors-a"], runs["ours-plain"]])
    a = frame[frame.run == str(runs["authors-a"])].set_index("metric")
    assert list(a.index) == ["acc", "ur", "sr", "wr", "ur[ours]", "sr[ours]", "wr[ours]"]
    assert (a.loc["ur", "n"], a.loc["ur", "denominator"]) == (12, "n_rated (authors')")
    assert (a.loc["ur[ours]", "value"], a.loc["ur[ours]", "n"], a.loc["ur[ours]", "denominator"]) == (
        0.9, 10, "n_rated (ours)")
    assert a.loc["ur[ours]", "ci_low"] == pytest.approx(OURS["ci95"]["ur"][0])
    assert set(a.counting) == {"authors"} and a["flags"]["sr"].startswith("reasoning judged")
    assert a.loc["sr", "n_unjudged"] == 3
    plain = frame[frame.run == str(runs["ours-plain"])]
    assert set(plain.counting) == {"ours"} and plain["flags"].isna().all()


def test_the_report_shows_flags_as_badges_both_denominators_and_the_unjudged(runs: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    page = Page(rv.report(list(runs.values()), out=tmp_path / "report.html").read_text(encoding="utf-8"))
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<span class="badge flag">⚑ semantic gate: none (edits unchecked)</span>' in html
    [table1] = [c for c in page.captions if c.startswith("Token-level attack")]
    rows = {row[0]: row for row in page.rows[table1]}
    assert set(rows) == {"ours-plain", "ours-flagged", "authors-a · authors' counting", "authors-b · authors' counting"}
    assert "⚑ reasoning judged by deterministic checkers only (arith)" in rows["ours-flagged"][4]  # its UR cell
    assert "⚑" not in "".join(rows["ours-plain"])
    [both] = [c for c in page.captions if c.startswith("Both denominators")]
    shown = [row[:4] for row in page.rows[both]]
    assert [row[1:] for row in shown] == [
        ["authors' (headline)", AUTHORS["definition"], "12"], ["ours", OURS["definition"], "10"],
        ["authors' (headline)", AUTHORS["definition"], "12"], ["ours", OURS["definition"], "10"]]
    # authors-a's UR over our denominator: its value, interval, n and flags in the cell.
    assert page.rows[both][1][4].startswith("90.0 [59.6, 98.2] n=10 ⚑ reasoning judged")
    [why] = [c for c in page.captions if c.startswith("Not attacked: why (ours-flagged")]
    assert [row[:2] for row in page.rows[why]] == [
        ["attacked, not rated: the judge rejects the clean reasoning too", "2"],
        ["attacked, answer kept, not rated: the reasoning judge abstained: no equation to check", "2"],
        ["attacked, answer kept, not rated: the reasoning judge abstained: unreadable verdict after 3 asks", "1"],
        ["attacked and rated (the UR, SR and WR denominator)", "10"]]
    assert any("Flagged runs" in line for line in html.splitlines())


def test_latex_marks_flagged_rates_and_names_the_counting(runs: dict[str, Path]) -> None:
    from robusteval.report.latex import compare_latex

    flagged = compare_latex([runs["ours-flagged"]])
    assert r"$^{\dagger}$" in flagged and "counting ours" in flagged
    assert "Rates marked \u2020: reasoning judged by deterministic checkers only (arith); semantic gate: none" in flagged
    plain = compare_latex([runs["ours-plain"]])
    assert "dagger" not in plain and "Rates marked" not in plain
    assert "counting authors" in compare_latex([runs["authors-b"]])
