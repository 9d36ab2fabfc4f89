"""Size and speed of the HTML report for a large run: N MATCHA records (default 10,000) in a run store.

The store is written through the store API in the exact record format of ``attack matcha`` (see
``tests/helpers/reportstores.py``: edits with offsets, judge verdicts, error types), the summary by the
library's own metrics. The script builds the report, then opens it in headless Chromium and times: the page
until the example browser is ready (data inflated, first page drawn), a filter change, and the next page.

    python bench/report_bench.py                 # 10,000 records
    python bench/report_bench.py --records 2000
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args()

    from helpers.reportstores import matcha_store
    from robusteval.report.build import build_report

    with tempfile.TemporaryDirectory() as tmp:
        began = time.perf_counter()
        run = matcha_store(Path(tmp) / "run", args.records)
        stored = time.perf_counter() - began
        began, cpu = time.perf_counter(), time.process_time()
        out = build_report([run], Path(tmp) / "report.html")
        built, built_cpu = time.perf_counter() - began, time.process_time() - cpu
        size = out.stat().st_size
        print(f"records: {args.records}; store written in {stored:.1f} s; report built in {built:.2f} s "
              f"({built_cpu:.2f} s CPU); "
              f"file {size / 1e6:.2f} MB ({size / args.records:.0f} bytes per record)")
        timings = browser_timings(out, args.chromium)
        print("chromium: " + "; ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in timings.items()))
    return 0


def browser_timings(path: Path, chromium: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        began = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_selector("#matcha-examples[data-ready=true]", timeout=120_000)
        ready = time.perf_counter() - began
        count = "document.querySelector('#matcha-examples .count').textContent"
        before = page.evaluate(count)
        began = time.perf_counter()
        page.select_option("#matcha-examples select[data-key=outcome]", "SR")
        page.wait_for_function(f"{count} !== {before!r}")
        filtered = time.perf_counter() - began
        began = time.perf_counter()
        page.click("#matcha-examples .next")
        page.wait_for_function("document.querySelector('#matcha-examples .page').textContent.startsWith('page 2')")
        paged = time.perf_counter() - began
        browser.close()
    if errors:
        raise SystemExit(f"page errors: {errors}")
    return {"load until the first page is drawn": ready, "filter change": filtered, "next page": paged}


if __name__ == "__main__":
    sys.exit(main())
