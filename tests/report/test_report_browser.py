"""The report in a real headless Chromium: built from real tiny-model runs of every method, it opens with no
console error and no network request, every section is drawn (charts have marks), the drawn values are the
summaries', filters and the search change the visible examples, pagination pages, hovering a number shows
its provenance, and hostile run text never runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import robusteval as rv
from helpers.browser import open_report, visible_titles, wait_until_ready
from helpers.reportstores import matcha_store
from helpers.runs import summary

SECTIONS = ["matcha", "varmath", "robustness", "hardlabel", "compare"]


@pytest.fixture(scope="module")
def report(all_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rv.report(list(all_runs.values()), out=tmp_path_factory.mktemp("browser") / "report.html")


def test_every_section_drawn_without_errors_or_requests(report: Path, all_runs: dict[str, Path],
                                                        tmp_path: Path) -> None:
    with open_report(report, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        assert page.eval_on_selector_all("main > section", "s => s.map(e => e.id)") == SECTIONS
        for section in SECTIONS:
            page.locator(f"#{section}").screenshot(path=str(tmp_path / f"{section}.png"))
            assert (tmp_path / f"{section}.png").stat().st_size > 5_000
        # Every chart has drawn marks with a size.
        charts = page.eval_on_selector_all(
            "svg.chart", "cs => cs.map(c => [c.querySelectorAll('rect.bar, circle.point').length, "
            "c.getBoundingClientRect().width])")
        assert len(charts) >= 5 and all(marks > 0 and width > 100 for marks, width in charts)
        # The outcome chart's bars are the summary's UR, SR and WR of the MATCHA run.
        stored = summary(all_runs["matcha"])
        bars = page.eval_on_selector_all("#matcha svg.bar-chart[aria-label^='Attack outcomes'] rect.bar",
                                         "rs => rs.map(r => [r.dataset.value, r.textContent])")
        drawn = {float(value) for value, title in bars if str(all_runs["matcha"]) in title}
        assert drawn == {stored["ur"], stored["sr"], stored["wr"]}
        # Fig. 3: the error-type bars are the summary's shares of its successes.
        assert stored["error_types"]["n"] >= 1
        bars = page.eval_on_selector_all("#matcha svg.bar-chart[aria-label^='Error types'] rect.bar",
                                         "rs => rs.map(r => [r.dataset.value, r.textContent])")
        drawn_types = {float(value) for value, title in bars if str(all_runs["matcha"]) in title}
        shares = stored["error_types"]["shares"]
        assert drawn_types == {v for c, v in shares.items() if stored["error_types"]["counts"][c]}
        # The hard-label curves' points are the summaries' success rates per α.
        points = page.eval_on_selector_all("#hardlabel circle.point", "ps => ps.map(p => parseFloat(p.dataset.value))")
        expected = {v for m in ("C-homophone", "C-pinyin") for v in summary(all_runs[f"wi-{m}"])["asr_by_rate"].values()}
        assert set(points) == expected
        assert opened.errors == []
        assert opened.requests == [report.resolve().as_uri()]


def test_filters_search_and_hover(report: Path, all_runs: dict[str, Path], tmp_path: Path) -> None:
    with open_report(report, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        everything = visible_titles(page, "matcha-examples")
        page.select_option("#matcha-examples select[data-key=outcome]", "SR")
        successes = visible_titles(page, "matcha-examples")
        assert 0 < len(successes) < len(everything)
        assert page.locator("#matcha-examples .item .badge.sr").count() == len(successes)
        assert page.locator("#matcha-examples mark.flag").count() >= 1  # the false equation, highlighted
        page.select_option("#matcha-examples select[data-key=outcome]", "")
        page.fill("#matcha-examples input.search", everything[1].split(" ")[0])
        assert visible_titles(page, "matcha-examples") == [everything[1]]
        before = visible_titles(page, "robustness-examples")
        page.select_option("#robustness-examples select[data-key=set]", "C-pinyin")
        after = visible_titles(page, "robustness-examples")
        assert after != before and all("C-pinyin" in title for title in after)
        cell = page.locator("#robustness td.num").first
        cell.hover()
        tip = page.evaluate("c => getComputedStyle(c, '::after').content", cell.element_handle())
        assert f"n = {summary(all_runs['robustness'])['n']}" in tip and str(all_runs["robustness"]) in tip
        assert opened.errors == []


def test_a_large_run_paginates(tmp_path: Path) -> None:
    """2,000 records (bench/report_bench.py times 10,000): compressed in the page, drawn one page at a time."""
    run = matcha_store(tmp_path / "large", 2_000)
    out = rv.report([run], out=tmp_path / "large.html")
    assert out.stat().st_size < 2_000_000
    with open_report(out, profile=tmp_path / "profile") as opened:
        page = opened.page
        page.wait_for_selector("#matcha-examples[data-ready=true]", timeout=60_000)
        first = visible_titles(page, "matcha-examples")
        assert len(first) == 20 and page.inner_text("#matcha-examples .page") == "page 1 of 100"
        page.click("#matcha-examples .next")
        assert page.inner_text("#matcha-examples .page") == "page 2 of 100"
        assert visible_titles(page, "matcha-examples")[0] != first[0]
        stored = summary(run)
        page.select_option("#matcha-examples select[data-key=outcome]", "SR")
        assert page.inner_text("#matcha-examples .count") == f"{stored['counts']['success']} of 2000 shown"
        page.select_option("#matcha-examples select[data-key=error]", "wrong reasoning")
        assert page.inner_text("#matcha-examples .count") == \
            f"{stored['error_types']['counts']['wrong reasoning']} of 2000 shown"
        shares = page.eval_on_selector_all("#matcha svg.bar-chart rect.bar", "rs => rs.map(r => r.dataset.value)")
        assert {float(v) for v in shares} >= set(stored["error_types"]["shares"].values())
        assert opened.errors == [] and opened.requests == [out.resolve().as_uri()]


def test_hostile_text_is_shown_not_run(tmp_path: Path) -> None:
    hostile = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"
    out = rv.report([matcha_store(tmp_path / "hostile", 3, text=hostile)], out=tmp_path / "hostile.html")
    with open_report(out, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        assert hostile in page.inner_text("#matcha-examples .item")
        assert page.locator("img").count() == 0
        assert opened.errors == [] and opened.requests == [out.resolve().as_uri()]
        assert json.loads(page.evaluate("JSON.stringify(document.title)")) == "robusteval report"


def test_marks_stay_on_their_words_after_non_bmp_text(tmp_path: Path) -> None:
    """Mark offsets count code points (Python's str); an emoji is two UTF-16 units in JavaScript, so the page
    must not slice the text by those units or every mark after an emoji shifts."""
    text = "🙂 Tom has 👩‍👩‍👧 apples and buys 𝟙𝟚 more at the 🛒 market today."
    run = matcha_store(tmp_path / "emoji", 3, text=text)
    out = rv.report([run], out=tmp_path / "emoji.html")
    with open_report(out, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        marked = page.eval_on_selector_all("#matcha-examples .items :is(mark.ins, mark.rep)",
                                           "ms => ms.map(m => m.textContent)")
        assert marked and set(marked) <= {"purple", "quickly", "seven", "river"}
        shown = page.eval_on_selector_all("#matcha-examples .pair pre.text", "ps => ps.map(p => p.textContent)")
        assert text in shown  # the text itself is whole: nothing lost or doubled around the marks
        assert opened.errors == []
