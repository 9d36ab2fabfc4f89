"""Opening a report in a real headless Chromium (the Debian ``chromium`` package, driven by Playwright).

No browser is ever downloaded: Playwright starts the system's ``/usr/bin/chromium``. Without it (or without
the ``playwright`` package) a test skips, or fails under ``ROBUSTEVAL_REQUIRE_ALL=1`` as in CI, where
``.ci/run`` installs it with apt. Every console error, page error, dialog and network request is recorded.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers.shared import REQUIRE_ALL, require_modules, skip_or_fail

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium_path() -> str:
    found = os.environ.get("ROBUSTEVAL_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        skip_or_fail("no chromium browser installed (apt-get install chromium)", REQUIRE_ALL)
    return found


@dataclass
class Opened:
    page: Any
    errors: list[str] = field(default_factory=list)  # console errors, page errors and dialogs
    requests: list[str] = field(default_factory=list)


@contextmanager
def open_report(path: Path, *, profile: Path, width: int = 1280, height: int = 900) -> Iterator[Opened]:
    """``path`` loaded in a fresh headless Chromium profile; yields the page and what it logged."""
    require_modules("playwright")
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=executable, args=FLAGS, headless=True,
            viewport={"width": width, "height": height})
        try:
            page = context.new_page()
            opened = Opened(page)
            page.on("console", lambda m: opened.errors.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: opened.errors.append(f"page error: {e}"))
            page.on("dialog", lambda d: (opened.errors.append(f"dialog: {d.message}"), d.dismiss()))
            context.on("request", lambda r: opened.requests.append(r.url))
            page.goto(path.resolve().as_uri())
            page.wait_for_load_state("load")
            yield opened
        finally:
            context.close()


#: True once every example browser of the page has read its items and drawn its first page.
BROWSERS_READY = "Array.from(document.querySelectorAll('.browser')).every(b => b.dataset.ready)"


def wait_until_ready(page: Any, **options: Any) -> None:
    """Wait until every example browser of the page is drawn (``options``: Playwright's, e.g. ``timeout``)."""
    page.wait_for_function(BROWSERS_READY, **options)


def visible_titles(page: Any, browser_id: str) -> list[str]:
    return page.locator(f"#{browser_id} .item-title").all_inner_texts()
