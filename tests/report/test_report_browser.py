"""The report in a real headless Chromium: built from real tiny-model runs of every method, it opens with no
console error and no network request, every section is drawn (charts have marks), the drawn values are the
summaries', every number's interval and n are visible without hovering (on screen and in print), the
"not attacked: why" table counts the run's records, filters and the search change the visible examples,
pagination pages, hovering a number shows its provenance unclipped, charts download as SVG and CSV, and hostile
run text never runs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import robusteval as rv
from helpers.browser import open_report, visible_titles, wait_until_ready
from helpers.reportstores import matcha_store
from helpers.runs import records, summary
from robusteval.metrics.matcha_summary import flag_texts

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
        assert drawn == {stored[m] for m in ("ur", "sr", "wr", "unjudged_rate", "clean_cot_wrong_rate")}
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
        tip = page.locator("body > .tip")
        assert tip.is_visible()
        assert f"n = {summary(all_runs['robustness'])['n']}" in tip.inner_text()
        assert str(all_runs["robustness"]) in tip.inner_text()
        assert opened.errors == []


def test_n_and_intervals_are_visible_without_hover(report: Path, all_runs: dict[str, Path], tmp_path: Path) -> None:
    stored = summary(all_runs["matcha"])
    with open_report(report, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        page.mouse.move(0, 0)
        assert not page.locator("body > .tip").is_visible()  # nothing hovered
        table = page.locator("#matcha .table-wrap", has=page.locator("h4", has_text="Token-level attack")).first
        cells = table.locator("tbody tr").first.locator("td.num")
        low, high = stored["ci95"]["sr"]
        sr = cells.nth(2)  # ACC, UR, SR, WR, unjudged, clean wrong
        # The number, its interval and n, then (this run judged by arith alone, ungated) its flags: as badges in
        # the row's first flagged cell (UR), a bare marker in the others (issue 35).
        words = sr.inner_text().split()
        assert words[:4] == [f"{stored['sr'] * 100:.1f}", f"[{low * 100:.1f},", f"{high * 100:.1f}]",
                             f"n={stored['n_attacked']}"]
        assert words[4:] == ["⚑"]
        assert " ".join(cells.nth(1).inner_text().split()).endswith(" ".join(f"⚑ {text}" for text in flag_texts(stored)))
        # Visible where a screenshot or a printout sees it: drawn with a size, and kept by the print style.
        box = sr.locator(".d").bounding_box()
        assert box is not None and box["height"] > 5 and box["width"] > 30
        page.emulate_media(media="print")
        assert sr.locator(".d").is_visible() and sr.locator(".d").inner_text().endswith(f"n={stored['n_attacked']}")
        page.emulate_media(media="screen")
        # Every number of every table shows its n (or the seeds a mean is over) without hover.
        shown = page.eval_on_selector_all("td.num .d", "ds => ds.map(d => d.innerText)")
        assert len(shown) == page.locator("td.num").count() - page.locator("td.num:not(:has(.d))").count()
        assert page.locator("#matcha td.num:not(:has(.d))").count() == 0
        # The hover box of a last row is drawn whole inside the window, not clipped by the table's wrapper.
        last = page.locator("#robustness .table-wrap tbody tr").last.locator("td.num").last
        last.scroll_into_view_if_needed()
        last.hover()
        tip = page.locator("body > .tip")
        assert tip.is_visible()
        box, size = tip.bounding_box(), page.viewport_size
        assert box is not None and size is not None
        assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"]
        assert opened.errors == []


def test_not_attacked_table_and_skipped_examples(report: Path, all_runs: dict[str, Path], tmp_path: Path) -> None:
    rows = records(all_runs["matcha"], "matcha_outcome")
    skipped = [r for r in rows if not r["attacked"]]
    reasons = {r["skip_reason"] for r in skipped}
    stored = summary(all_runs["matcha"])
    with open_report(report, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        table = page.locator("#matcha .table-wrap", has=page.locator("h4", has_text="Not attacked: why")).first
        shown = {row[0]: int(row[1]) for row in
                 table.locator("tbody tr").evaluate_all("rs => rs.map(r => Array.from(r.cells, c => c.innerText))")}
        assert {k: v for k, v in shown.items() if k in reasons} == {
            reason: sum(1 for r in skipped if r["skip_reason"] == reason) for reason in reasons}
        assert sum(v for k, v in shown.items() if k.startswith("attacked, ")) == stored["n_attacked"]
        assert sum(shown.values()) == stored["n"]
        if skipped:  # the tiny model leaves some questions alone; each is browsable with its reason
            page.select_option("#matcha-examples select[data-key=outcome]", "not attacked")
            assert page.inner_text("#matcha-examples .count") == f"{len(skipped)} of {len(rows)} shown"
            first = page.locator("#matcha-examples .item").first
            assert first.locator(".rows .v").first.inner_text() in reasons
        assert opened.errors == []


def test_charts_download_as_svg_and_csv(report: Path, all_runs: dict[str, Path], tmp_path: Path) -> None:
    with open_report(report, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        figure = page.locator("#matcha figure", has=page.locator("svg[aria-label^='Attack outcomes']")).first
        with page.expect_download() as svg_download:
            figure.locator("a[download$='.svg']").click()
        saved = Path(svg_download.value.path()).read_text(encoding="utf-8")
        # A well-formed SVG document with the bars the page draws (read by the browser's own XML parser).
        marks = page.evaluate("""text => {
            const svg = new DOMParser().parseFromString(text, "image/svg+xml");
            if (svg.querySelector("parsererror")) return null;
            return Array.from(svg.querySelectorAll("rect.bar"), r => r.getAttribute("data-value"));
        }""", saved)
        assert marks == figure.locator("svg rect.bar").evaluate_all("rs => rs.map(r => r.dataset.value)")
        with page.expect_download() as csv_download:
            figure.locator("a[download$='.csv']").click()
        assert csv_download.value.suggested_filename.endswith(".csv")
        rows = list(csv.DictReader(Path(csv_download.value.path()).read_text(encoding="utf-8").splitlines()))
        stored = summary(all_runs["matcha"])
        mine = {row["series"]: float(row["value"]) for row in rows if str(all_runs["matcha"]) in row["runs"]}
        assert mine == {"UR": stored["ur"], "SR": stored["sr"], "WR": stored["wr"],
                        "unjudged": stored["unjudged_rate"], "clean wrong": stored["clean_cot_wrong_rate"]}
        assert opened.errors == [] and opened.requests[0] == report.resolve().as_uri()


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
