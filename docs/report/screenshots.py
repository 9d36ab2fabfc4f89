"""Re-make the README's screenshots of the quick-start report in headless Chromium.

    robusteval quickstart && python docs/report/screenshots.py [robusteval-quickstart/report.html]

Each section of the page is shot at 1100 px wide (clipped to its first ``HEIGHTS`` pixels) into this folder,
then shrunk with ``pngquant`` when it is installed. Uses the test suite's browser helper (the system's
Chromium driven by Playwright; nothing is downloaded).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from helpers.browser import open_report, wait_until_ready  # noqa: E402

#: element id -> (file name, height in pixels)
SECTIONS = {
    "matcha": ("matcha.png", 1180),
    "matcha-examples": ("matcha-examples.png", 640),
    "varmath": ("varmath.png", 620),
    "robustness": ("robustness.png", 700),
    "hardlabel": ("hardlabel.png", 700),
}


def main(report: Path) -> int:
    if not report.is_file():
        print(f"{report}: no such report (run `robusteval quickstart` first)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as profile, open_report(report, profile=Path(profile), width=1100) as opened:
        page = opened.page
        wait_until_ready(page)
        for element, (name, height) in SECTIONS.items():
            # The section's place on the whole page (bounding boxes are relative to the scrolled viewport).
            top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top + window.scrollY",
                                element)
            tall = page.evaluate("id => document.getElementById(id).getBoundingClientRect().height", element)
            clip = {"x": 0, "y": top, "width": 1100, "height": min(tall, height)}
            target = HERE / name
            page.screenshot(path=str(target), clip=clip, full_page=True)
            if shutil.which("pngquant"):
                subprocess.run(["pngquant", "--force", "--skip-if-larger", "--output", str(target), "64", str(target)],
                               check=False)
            print(f"{target} ({target.stat().st_size // 1024} KB)")
        if opened.errors:
            print("browser errors: " + "; ".join(opened.errors), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "robusteval-quickstart/report.html")))
