"""What a report shows without hovering or running a script: each number's interval and n in its cell, why
questions were not attacked (from the summary or, for older runs, counted from the records), the success rule
of Table 1, label modes and unreadable answers beside every perturbed-benchmark accuracy, semantic verdicts
named by the replaced text, trimmed answer boxes, sensible axes for all-zero charts, and each chart's SVG and
CSV downloads."""

from __future__ import annotations

import base64
import csv
import io
import re
from pathlib import Path
from typing import Any

import robusteval as rv
from helpers.reportpage import Page
from helpers.reportstores import SKIP_REASONS, matcha_store
from helpers.runs import records, summary
from robusteval.attacks.matcha.results.examples import semantic_rows, semantic_summary, token_texts
from robusteval.attacks.matcha.results.reasons import not_attacked
from robusteval.attacks.wordimportance.results.section import ORIGINAL_WRONG, wordimportance_skip_reason
from robusteval.evals.robustness.results import section as perturbed
from robusteval.report.charts import bar_chart
from robusteval.report.highlight import text_block
from robusteval.report.html import block_html
from robusteval.report.model import BarChart, Num
from robusteval.runs import Run, load_run


def page_of(runs: list[Path], out: Path) -> Page:
    return Page(rv.report(runs, out=out).read_text(encoding="utf-8"))


def test_a_number_shows_its_interval_and_n() -> None:
    assert Num(0.125, n=40, ci=(0.041, 0.29), percent=True).detail() == "[4.1, 29.0] n=40"
    assert Num(2.5, n=3, digits=2).detail() == "n=3"  # no interval known: none invented
    assert Num(None, n=0, ci=None, percent=True).detail() == "n=0"  # undefined, and why: nothing counted
    mean = Num(0.5, std=0.1, percent=True, basis="2 seeds, n=12/10", caveat="hard labels")
    assert (mean.text(), mean.detail()) == ("50.0 (10.0)", "2 seeds, n=12/10 hard labels")


def test_matcha_cells_show_n_attacked_and_the_interval(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 20, cot_wrong=4)
    stored = summary(run)
    # 4 clean reasonings judged wrong: a category of their own, still in the denominator (issue 34).
    assert stored["n_attacked"] == 20 and stored["among_judged"]["n"] == 16 and stored["n"] == 20
    page = page_of([run], tmp_path / "r.html")
    table = next(c for c in page.captions if c.startswith("Token-level attack"))
    row = page.rows[table][0]
    low, high = stored["ci95"]["sr"]
    assert row[4] == f"{stored['sr'] * 100:.1f} [{low * 100:.1f}, {high * 100:.1f}] n=20"  # SR rests on n_attacked
    assert row[7].startswith(f"{stored['clean_cot_wrong_rate'] * 100:.1f} [") and row[7].endswith(" n=20")
    assert row[2].endswith(" n=20")  # ACC on all questions
    # Every number of the page shows an n (or the basis of a mean) in its cell, not only on hover.
    assert page.shown and all(re.search(r"n=\d|seeds", text) for text in page.shown), page.shown


def test_not_attacked_table_from_the_records_and_from_the_summary(tmp_path: Path) -> None:
    old = matcha_store(tmp_path / "old", 12, skipped=7, cot_wrong=2, summary_reasons=False)
    new = matcha_store(tmp_path / "new", 12, skipped=7, cot_wrong=2, summary_reasons=True)
    assert "skip_reasons" not in summary(old) and "skip_reasons" in summary(new)
    rows = records(old, "matcha_outcome")
    expected = {reason: sum(1 for r in rows if r.get("skip_reason") == reason) for reason in SKIP_REASONS}
    for run, source in ((old, "records"), (new, "summary")):
        found = not_attacked(load_run(run))
        assert (found.skipped, found.excluded, found.source) == (expected, {"clean_cot_wrong": 2}, source)
        page = page_of([run], tmp_path / f"{run.name}.html")
        caption = next(c for c in page.captions if c.startswith("Not attacked: why"))
        shown = {row[0]: int(row[1]) for row in page.rows[caption]}
        assert {k: shown[k] for k in SKIP_REASONS} == expected
        attacked = {k: v for k, v in shown.items() if k.startswith("attacked, ")}
        assert shown["attacked, answer kept, clean reasoning already judged wrong"] == 2
        assert sum(attacked.values()) == summary(run)["n_attacked"] == 12  # the attacked, by category
        assert sum(shown.values()) == summary(run)["n"] == 19  # every question is in exactly one row
    # A run that attacked every question still says so.
    page = page_of([matcha_store(tmp_path / "all", 5)], tmp_path / "all.html")
    caption = next(c for c in page.captions if c.startswith("Not attacked: why"))
    rows = page.rows[caption]
    assert all(row[0].startswith("attacked, ") for row in rows) and sum(int(row[1]) for row in rows) == 5


def test_word_importance_skips_say_why() -> None:
    """The attack skips an example the model already gets wrong on the original (``search.attack_example``)."""
    assert wordimportance_skip_reason({"status": "skipped", "original_label": "neutral", "label": "entailment"}) \
        == ORIGINAL_WRONG
    assert "no label" in str(wordimportance_skip_reason({"status": "skipped", "original_label": None}))
    assert wordimportance_skip_reason({"status": "failed", "original_label": "entailment"}) is None


def test_skipped_questions_are_browsable_with_their_reason(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 4, skipped=3)
    items = page_of([run], tmp_path / "r.html").data["matcha-examples"]
    skipped = [i for i in items if i["filters"]["outcome"] == "not attacked"]
    assert len(items) == 7 and len(skipped) == 3
    for item, reason in zip(skipped, SKIP_REASONS, strict=True):
        assert dict(item["blocks"][1]["rows"])["why not attacked"] == reason
    # The question whose insertions were all refused shows the question the attack had.
    assert skipped[2]["blocks"][0]["text"]["t"].startswith("Tom has 2 apples")


def test_table_1_names_the_success_rule_of_its_rows(tmp_path: Path) -> None:
    paper = matcha_store(tmp_path / "paper", 6, success_check="insertion-and-final")
    plain = matcha_store(tmp_path / "plain", 6, seed=1)  # made before --success-check: final
    page = page_of([paper, plain], tmp_path / "r.html")
    table = next(c for c in page.captions if c.startswith("Token-level attack"))
    assert sorted(row[1] for row in page.rows[table]) == ["final", "insertion-and-final"]
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    decided = summary(paper)["decided_at"]
    assert f"{decided['insertion']} at the insertion check, {decided['final']} at the final check" in html
    assert "not comparable" in html
    item = page.data["matcha-examples"][1]  # the paper run's second record was decided at the insertions
    assert dict(item["blocks"][1]["rows"])["decided at"].startswith("right after the random insertions")


def test_semantic_verdicts_name_the_replaced_text() -> None:
    record: dict[str, Any] = {
        "perturbed_question": "Tom has seven apples quickly.",
        "edits": [{"start": 8, "end": 13, "kind": "replaced", "token_id": 489},
                  {"start": 21, "end": 28, "kind": "inserted", "token_id": 77}],
        "insertions": [{"tokens": [352, 77], "accepted": True,
                        "semantic": {"judge": "llm:judge", "label": True, "raw": "same"}}],
        "steps": [{"step": 0, "proposals": [
            {"position": 3, "old": 352, "new": 489, "accepted": True,
             "semantic": {"judge": "llm:judge", "label": True, "raw": "same"}},
            {"position": 5, "old": 77, "new": 901, "accepted": False,
             "semantic": {"judge": "llm:judge", "label": False, "raw": "changed"}}]}],
    }
    rows = semantic_rows(record, token_texts([record]))
    assert rows[0][0] == "random insertion 1: token 352 (text not recorded), 'quickly'"
    assert rows[1][0] == "step 0, position 3: token 352 (text not recorded) → 'seven'"
    assert rows[2] == ["step 0, position 5: 'quickly' → token 901 (text not recorded)",
                       "rejected by llm:judge: changed"]
    assert semantic_summary(record, len(rows)) == "semantic judge: 3 verdict(s) on 3 edit(s)"
    # Text the attack recorded itself wins over the ids.
    record["steps"][0]["proposals"][0].update({"old_text": "purple", "new_text": "seven"})
    assert semantic_rows(record)[1][0] == "step 0, position 3: 'purple' → 'seven'"
    # --semantic-judge none: nothing was judged, and the page must not say otherwise.
    unchecked = {"judge": "none(always-same-meaning)", "label": True, "raw": "", "detail": {"method": "none"}}
    for verdict in [record["insertions"][0], *record["steps"][0]["proposals"]]:
        verdict["semantic"] = unchecked
    said = semantic_summary(record, 3)
    assert "verdict" not in said and "none of them judged" in said
    assert semantic_rows(record)[0][1] == "accepted without a check (semantic judge none)"


def test_answer_boxes_lose_trailing_whitespace() -> None:
    assert text_block("The answer is 7.\n\n\n\n   \n") == {"t": "The answer is 7."}
    block = text_block("  Tom has 3 apples.\n\n", [[7, 10, "ins", "x"], [11, 30, "rep", "cut to the text"]])
    assert block == {"t": "  Tom has 3 apples.", "m": [[7, 10, "ins", "x"], [11, 19, "rep", "cut to the text"]]}


def test_an_all_zero_chart_has_a_full_axis() -> None:
    zeros = {(g, "SR"): Num(0.0, n=5, percent=True) for g in ("a", "b")}
    svg = bar_chart(BarChart("all zero", ["a", "b"], ["SR"], zeros))
    ticks = re.findall(r'class="tick"[^>]*>([^<]+)<', svg)
    assert ticks == ["0", "25", "50", "75", "100"]
    counts = {("a", "n"): Num(0.0), ("b", "n"): Num(0.0)}
    ticks = re.findall(r'class="tick"[^>]*>([^<]+)<', bar_chart(BarChart("zero counts", ["a", "b"], ["n"], counts,
                                                                         percent=False)))
    assert ticks == ["0", "0.25", "0.5", "0.75", "1"]


def _download(html: str, suffix: str) -> list[str]:
    found = re.findall(rf'<a download="([^"]+\.{suffix})" href="data:[^;]+(?:;charset=utf-8)?;base64,([^"]+)"', html)
    return [base64.b64decode(data).decode("utf-8") for _, data in found]


def test_each_chart_downloads_as_svg_and_csv(tmp_path: Path) -> None:
    run = matcha_store(tmp_path / "run", 30)  # with successes: the error-type chart too
    html = rv.report([run], out=tmp_path / "r.html").read_text(encoding="utf-8")
    inline = re.findall(r"<svg class=\"chart.*?</svg>", html)
    svgs, tables = _download(html, "svg"), _download(html, "csv")
    assert len(inline) == len(svgs) == len(tables) >= 2
    for drawn, saved in zip(inline, svgs, strict=True):
        assert saved.startswith("<?xml") and drawn in saved  # the same drawing, as a standalone file
        assert 'fill="#' in saved and "font-family" in saved  # styled without the page's stylesheet
    stored = summary(run)
    outcomes = list(csv.DictReader(io.StringIO(tables[0])))
    assert {row["series"]: float(row["value"]) for row in outcomes} == {
        **{m.upper(): stored[m] for m in ("ur", "sr", "wr")}, "unjudged": stored["unjudged_rate"],
        "clean wrong": stored["clean_cot_wrong_rate"]}
    sr = next(row for row in outcomes if row["series"] == "SR")
    assert (float(sr["ci95_low"]), float(sr["ci95_high"]), int(sr["n"])) == (*stored["ci95"]["sr"], stored["n_attacked"])
    assert str(run) in sr["runs"]


def test_perturbed_accuracies_carry_label_mode_and_unparsed_answers(tmp_path: Path) -> None:
    def run(mode: str | None, unparsed: int) -> Run:
        summary: dict[str, Any] = {"n": 10, "acc_original": 0.0, "acc_original_ci95": [0.0, 0.0],
                                   "sets": {"C-pinyin": {"acc": 0.0, "acc_ci95": [0.0, 0.0]}}, "rb_index": None,
                                   "n_unparsed": {"original": unparsed, "C-pinyin": unparsed}}
        if mode:
            summary["label_mode"] = mode
        return Run(tmp_path / str(mode), {"command": "robustness"}, {}, summary, {})

    hard, soft, old = run("hard", 10), run("soft", 10), run(None, 0)
    # An old summary's zero-width interval is not shown as one (a point is not certainty at n = 10).
    assert perturbed.accuracy(hard, "C-pinyin").detail() == "[n too small] n=10 hard labels, 10 unparsed"
    assert perturbed.accuracy(soft, "C-pinyin").detail() == "[n too small] n=10 soft labels"
    assert perturbed.accuracy(old, perturbed.ORIGINAL).caveat == "hard labels"  # before --label-mode: hard
    assert perturbed.rb_index(hard).caveat == "hard labels, 20 unparsed"
    assert perturbed.labels_cell(hard).endswith("unparsed (counted wrong): original 10, C-pinyin 10 of 10")
    table = block_html(perturbed.tables([hard, soft])[0])
    assert "not comparable" in table and "· hard labels" in table and "· soft labels" in table
