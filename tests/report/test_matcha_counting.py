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
from helpers.runs import cli_inproc
from helpers.shared import needs_modules
from robusteval.attacks.matcha.attack import MatchaAttack
from robusteval.metrics.formatting import format_rate
from robusteval.metrics.stats import wilson_interval
from robusteval.report.tables import print_exclusions, print_flags, print_summary_table

#: 12 attacked questions, all in the authors' denominator (9 kept, 3 broken); ours holds 11 of them (one has no
#: reasoning after its clean answer): 8 kept, 1 broken, 2 whose clean reasoning the judge rejects (a category of
#: their own: a judge decision never shrinks a denominator).
OURS = denominator(8, 1, 0, "every attacked example with a clean reasoning after the answer", clean_cot_wrong=2)
AUTHORS = denominator(9, 3, 0, "every clean-correct question (the authors' code)")
UNJUDGED = {"unjudged_reasons": {"no equation to check": 2, "unreadable verdict after 3 asks": 1}}
KINDS = ["unsuccessful"] * 9 + ["success"] + ["clean_cot_wrong"] * 2
#: The flagged run: 3 of its kept answers unjudged (the judge abstained), in the denominator as their own category.
FLAGGED_KINDS = ["unsuccessful"] * 6 + ["success"] + ["clean_cot_wrong"] * 2 + ["unjudged"] * 3


def _pct(k: int, n: int) -> str:
    """``75.0 % [46.8, 91.1]``: k of n as runs show prints it."""
    return format_rate(k / n, wilson_interval(k, n), scale=100.0, digits=1, unit=" %")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("counting")
    flags = {"flags": [DETERMINISTIC, UNGATED]}
    return {
        "ours-plain": matcha_store(root / "plain", 12, kinds=KINDS, model_name="hf:ours-plain", seed=0),
        "ours-flagged": matcha_store(root / "flagged", 12, kinds=FLAGGED_KINDS, model_name="hf:ours-flagged", seed=1,
                                     summary={"counting": "ours", **flags, **UNJUDGED}),
        "authors-a": matcha_store(root / "authors-a", 12, kinds=KINDS, model_name="hf:authors-a", seed=2,
                                  summary={**authors_summary(OURS, AUTHORS), **flags}),
        "authors-b": matcha_store(root / "authors-b", 12, kinds=KINDS, model_name="hf:authors-b", seed=3,
                                  summary=authors_summary(OURS, denominator(8, 4, 0, AUTHORS["definition"]))),
    }


def _summary(**keys: Any) -> dict[str, Any]:
    """A summary as the pipeline returns it to the attack command (the fields its table reads): by default one
    made before rates were over every attacked example (``n_rated``, no ``rates_over``)."""
    return {"model": "hf:m", "dataset": "gsm8k", "level": "token", "variant": "full", "target_answer": "clean",
            "judges": {"reasoning": "arith", "semantic": "none"}, "n": 12, "n_correct": 12, "acc": 1.0,
            "n_attacked": 12, "n_rated": 10, "ur": 0.9, "sr": 0.1, "wr": 0.0,
            "ci95": {"acc": [0.757, 1.0], **{k: list(wilson_interval(c, 10)) for k, c in (("ur", 9), ("sr", 1),
                                                                                           ("wr", 0))}},
            "skip_reasons": {}, "exclusions": {}, **keys}


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
    # Its rates are over n_rated, and the table says so.
    _, _, columns = MatchaAttack().table(_summary())
    assert "n_rated" in columns


def test_an_old_run_that_left_unjudged_answers_out_is_flagged() -> None:
    lines = _printed(_summary(n_unjudged=2, unjudged_reasons={"no equation to check": 2}))
    assert any(line.startswith("⚑ rates over the 10 judged of 12 only") and "WR is inflated" in line
               for line in lines)


def test_the_attack_table_flags_rates_and_shows_both_denominators() -> None:
    summary = _summary(**authors_summary(OURS, AUTHORS), flags=[DETERMINISTIC, UNGATED], rates_over="n_attacked",
                       n_unjudged=0)
    del summary["n_rated"]
    _, rows, columns = MatchaAttack().table(summary)
    assert columns == ["model", "dataset", "n", "n_correct", "acc", "n_attacked", "wr", "sr", "ur", "unjudged",
                       "clean_wrong", "outcomes"]
    # The headline row (the authors' denominator, n = 12), then ours (n = 11): each rate with its interval, ⚑,
    # and the categories' counts summing to n.
    assert [(row["n_attacked"], row["ur"], row["sr"], row["outcomes"]) for row in rows] == [
        ("12 authors'", "0.750 [0.468, 0.911] ⚑", "0.250 [0.089, 0.532] ⚑",
         "changed 0 + broken 3 + intact 9 + unjudged 0 + clean wrong 0 = 12"),
        ("11 ours", format_rate(8 / 11, wilson_interval(8, 11)) + " ⚑", format_rate(1 / 11, wilson_interval(1, 11))
         + " ⚑", "changed 0 + broken 1 + intact 8 + unjudged 0 + clean wrong 2 = 11")]
    assert rows[0]["acc"] == "1.000 [0.500, 1.000]" and rows[1]["acc"] == ""  # ACC is not the judge's: unflagged
    lines = _printed(summary)
    assert lines[0].startswith("MATCHA token-level (full), counting: authors, target answer: clean")
    text = " ".join(lines)
    for said in ("rates over n_attacked (every attacked example, no judge decision shrinks it)",
                 f"rates over authors' n_attacked (the headline): {AUTHORS['definition']}",
                 f"rates over ours n_attacked: {OURS['definition']}",
                 "secondary view, among the judged answers only (n_judged = 12;",
                 "secondary view, among the judged answers only (ours n_judged = 9;"):
        assert said in text
    assert lines[-2:] == ["⚑ reasoning judged by deterministic checkers only (arith)",
                          "⚑ semantic gate: none (edits unchecked)"]


def test_runs_of_different_countings_are_never_ranked_together(runs: dict[str, Path]) -> None:
    boards = rv.compare_runs(list(runs.values()), max_width=1.0)
    assert [sorted(board.models) for board in boards] == [["ours-flagged", "ours-plain"], ["authors-a", "authors-b"]]
    assert "config.counting=ours" in boards[0].apart and "config.counting=authors" in boards[1].apart
    assert all(row["counting"] == ("authors" if "authors" in board.apart else "ours")
               for board in boards for row in board.rows)
    ours, authors = boards
    assert "ur_ours" not in ours.shown and "flags" in ours.shown and "n_unjudged" in ours.shown
    assert {"unjudged", "clean_wrong", "outcomes", "wr_judged"} <= set(ours.shown)
    unjudged = "⚑ 3 of 12 unjudged (answer kept, the judge gave no verdict: a category of its own)"
    assert {row["model"]: row["flags"] for row in ours.rows} == {
        "ours-plain": "", "ours-flagged": "⚑ reasoning judged by deterministic checkers only (arith); "
                                          f"⚑ semantic gate: none (edits unchecked); {unjudged}"}
    flagged = next(row for row in ours.rows if row["model"] == "ours-flagged")
    assert flagged["outcomes"] == "changed 0 + broken 1 + intact 6 + unjudged 3 + clean wrong 2 = 12"
    assert (flagged["ur"].value, flagged["ur"].n, flagged["unjudged"].value) == (0.5, 12, 0.25)  # type: ignore[union-attr]
    assert (flagged["n_judged"], flagged["ur_judged"].value) == ("7", 6 / 7)  # type: ignore[union-attr]
    # The authors' group ranks by the headline (authors') UR, and shows ours beside it with its own n.
    assert [row["model"] for row in authors.rows] == ["authors-a", "authors-b"]
    a = authors.rows[0]
    assert (a["n_attacked"], a["ur"].value, a["ur"].n) == ("12", 0.75, 12)  # type: ignore[union-attr]
    assert (a["n_attacked_ours"], a["ur_ours"].value, a["ur_ours"].n) == ("11", 8 / 11, 11)  # type: ignore[union-attr]
    assert a["clean_wrong_ours"].value == 2 / 11  # type: ignore[union-attr]
    assert tuple(a["ur_ours"].ci) == tuple(OURS["ci95"]["ur"]) and a["ur"].flags and not authors.rows[1]["ur"].flags  # type: ignore[union-attr]


def test_runs_compare_prints_and_writes_the_flags_and_both_denominators(runs: dict[str, Path], tmp_path: Path
                                                                        ) -> None:
    done = cli_inproc("runs", "compare", *map(str, runs.values()), "--max-interval-width", "1")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "(comparable group 1 of 2)" in text and "config.counting=authors" in text
    assert ("ours-flagged: ⚑ reasoning judged by deterministic checkers only (arith); ⚑ semantic gate: none "
            "(edits unchecked); ⚑ 3 of 12 unjudged") in text and "] ⚑" in text and "ours-plain: " not in text
    assert "the same runs over our denominator (counting: authors" in text and "UR % (ours)" in text
    assert "secondary view, not the headline" in text and "WR % among judged" in text
    assert "⚑: a flagged rate" in text and "n_attacked" in text
    out = tmp_path / "board.csv"
    assert cli_inproc("runs", "compare", *map(str, runs.values()), "--format", "csv", "--output", str(out)).returncode == 0
    rows = {row["model"]: row for row in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["ours-flagged"]["flags"].startswith("⚑ reasoning judged") and rows["ours-plain"]["flags"] == ""
    assert (rows["ours-flagged"]["n_unjudged"], rows["ours-plain"]["n_unjudged"]) == ("3", "0")
    assert (rows["ours-flagged"]["unjudged"], rows["ours-flagged"]["unjudged_n"]) == ("0.25", "12")
    a = rows["authors-a"]
    assert (a["counting"], a["ur"], a["ur_n"], a["ur_ours_n"]) == ("authors", "0.75", "12", "11")
    assert float(a["ur_ours"]) == pytest.approx(8 / 11)
    assert float(a["ur_ours_ci_low"]) == pytest.approx(OURS["ci95"]["ur"][0])
    assert rows["ours-plain"]["group"] != a["group"]


def test_runs_show_marks_flagged_rates_and_gives_both_denominators(runs: dict[str, Path]) -> None:
    shown = json.loads(cli_inproc("runs", "show", str(runs["authors-a"]), "--json").stdout)
    assert shown["counting"] == "authors"
    assert shown["flags"] == ["⚑ reasoning judged by deterministic checkers only (arith)",
                              "⚑ semantic gate: none (edits unchecked)"]
    flags = "(reasoning judged by deterministic checkers only (arith); semantic gate: none (edits unchecked))"
    assert shown["rates"]["ur"] == f"{_pct(9, 12)} ⚑, n_attacked (authors') = 12 {flags}"
    assert shown["rates"]["ur[ours]"] == f"{_pct(8, 11)} ⚑, n_attacked (ours) = 11 {flags}"
    assert shown["rates"]["clean_cot_wrong_rate[ours]"] == f"{_pct(2, 11)} ⚑, n_attacked (ours) = 11 {flags}"
    assert shown["rates"]["acc"].endswith(", n = 12")
    flagged = json.loads(cli_inproc("runs", "show", str(runs["ours-flagged"]), "--json").stdout)
    assert flagged["rates"]["unjudged_rate"].startswith(f"{_pct(3, 12)} ⚑, n_attacked = 12")
    assert flagged["outcomes"] == "changed 0 + broken 1 + intact 6 + unjudged 3 + clean wrong 2 = 12"
    assert flagged["left_out"]["unjudged_reasons"] == UNJUDGED["unjudged_reasons"]
    plain = json.loads(cli_inproc("runs", "show", str(runs["ours-plain"]), "--json").stdout)
    assert (plain["counting"], plain["flags"]) == ("ours", [])
    assert plain["rates"]["ur"] == f"{_pct(9, 12)}, n_attacked = 12"


@needs_modules("pandas")
def test_results_frame_has_both_denominators_flags_and_counting(runs: dict[str, Path]) -> None:
    frame = rv.results_frame([runs["authors-a"], runs["ours-plain"]])
    a = frame[frame.run == str(runs["authors-a"])].set_index("metric")
    assert list(a.index)[:5] == ["acc", "wr", "sr", "ur", "unjudged_rate"]
    assert {"ur[ours]", "clean_cot_wrong_rate[ours]", "ur[judged]"} <= set(a.index)
    assert (a.loc["ur", "n"], a.loc["ur", "denominator"]) == (12, "n_attacked (authors')")
    assert (a.loc["ur[ours]", "value"], a.loc["ur[ours]", "n"], a.loc["ur[ours]", "denominator"]) == (
        pytest.approx(8 / 11), 11, "n_attacked (ours)")
    assert a.loc["ur[ours]", "ci_low"] == pytest.approx(OURS["ci95"]["ur"][0])
    assert set(a.counting) == {"authors"} and a["flags"]["sr"].startswith("reasoning judged")
    plain = frame[frame.run == str(runs["ours-plain"])]
    assert set(plain.counting) == {"ours"} and plain["flags"].isna().all()


def test_the_report_shows_flags_as_badges_both_denominators_and_the_unjudged(runs: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    page = Page(rv.report(list(runs.values()), out=tmp_path / "report.html").read_text(encoding="utf-8"))
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<span class="badge flag">⚑ semantic gate: none (edits unchecked)</span>' in html
    [table1] = [c for c in page.captions if c.startswith("Token-level attack")]
    assert "over every attacked question (n_attacked" in table1
    rows = {row[0]: row for row in page.rows[table1]}
    assert set(rows) == {"ours-plain", "ours-flagged", "authors-a · authors' counting", "authors-b · authors' counting"}
    # Each flag's badge is spelt out once per row (issue 35): in the first flagged cell (UR), not in SR or WR.
    flagged = rows["ours-flagged"]
    assert "⚑ reasoning judged by deterministic checkers only (arith)" in flagged[3]
    assert all("reasoning judged" not in cell for cell in flagged[4:])
    assert "⚑" not in "".join(rows["ours-plain"])
    # UR, SR, WR, unjudged and clean wrong of the flagged run: 6, 1, 0, 3 and 2 of 12.
    assert [cell.split(" [")[0] for cell in flagged[3:8]] == ["50.0", "8.3", "0.0", "25.0", "16.7"]
    [both] = [c for c in page.captions if c.startswith("Both denominators")]
    shown = [row[:4] for row in page.rows[both]]
    assert [row[1:] for row in shown] == [
        ["authors' (headline)", AUTHORS["definition"], "12"], ["ours", OURS["definition"], "11"],
        ["authors' (headline)", AUTHORS["definition"], "12"], ["ours", OURS["definition"], "11"]]
    assert page.rows[both][1][-1] == "changed 0 + broken 1 + intact 8 + unjudged 0 + clean wrong 2 = 11"
    # authors-a's UR over our denominator: its value, interval, n and flags in the cell.
    assert page.rows[both][1][4].startswith("72.7 [43.4, 90.3] n=11 ⚑ reasoning judged")
    [why] = [c for c in page.captions if c.startswith("Not attacked: why (ours-flagged")]
    assert [row[:2] for row in page.rows[why]] == [
        ["attacked, answer changed", "0"], ["attacked, answer kept, reasoning judged wrong", "1"],
        ["attacked, answer kept, reasoning judged correct", "6"],
        ["attacked, answer kept, the reasoning judge gave no verdict: no equation to check", "2"],
        ["attacked, answer kept, the reasoning judge gave no verdict: unreadable verdict after 3 asks", "1"],
        ["attacked, answer kept, clean reasoning already judged wrong", "2"]]
    assert sum(int(row[1]) for row in page.rows[why]) == 12
    [judged] = [c for c in page.captions if c.startswith("Secondary view, not the headline")]
    assert any(row[1] == "7" for row in page.rows[judged])
    assert any("Flagged runs" in line for line in html.splitlines())


def test_latex_marks_flagged_rates_and_names_the_counting(runs: dict[str, Path]) -> None:
    from robusteval.report.latex import compare_latex

    flagged = compare_latex([runs["ours-flagged"]])
    assert r"$^{\dagger" in flagged and "Counting: ours" in flagged
    assert "Flagged rows: $\\dagger$ " in flagged and "reasoning judged by deterministic checkers only (arith)" in flagged
    assert "3 of 12 unjudged" in flagged and r"$n_{\mathrm{att}}$ attacked questions" in flagged
    plain = compare_latex([runs["ours-plain"]])
    assert "dagger" not in plain and "Flagged rows" not in plain
    assert "Counting: the authors' rules" in compare_latex([runs["authors-b"]])
