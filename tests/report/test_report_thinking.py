"""The report on a thinking target's MATCHA run (issue 27): each question shows the replies (where the answer is
read) and folds the thinking traces into a collapsed ``<details>``, which a reader opens; a question whose trace
never closed says so."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from robusteval.cli.main import main
from robusteval.store import RunStore

SAMPLE = str(resources.files("robusteval.data") / "samples" / "math.jsonl")


def _run(model: Path, out: Path, *budget: str) -> Path:
    args = [
        "attack",
        "matcha",
        "--model",
        f"hf:{model}",
        "--dataset",
        "jsonl",
        "--data-file",
        SAMPLE,
        "--answer-type",
        "number",
        "--level",
        "token",
        "--target-answer",
        "clean",
        "--judge",
        "arith",
        "--semantic-judge",
        "none",
        "--limit",
        "3",
        "--steps",
        "1",
        *budget,
        "--out",
        str(out),
    ]
    assert main(args) == 0
    return out


@pytest.fixture(scope="module")
def thinking_runs(tiny_thinking_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("thinking-report")
    return {
        "attacked": _run(
            tiny_thinking_dir, root / "attacked", "--max-new-tokens", "48", "--max-thinking-tokens", "32"
        ),
        "cut": _run(tiny_thinking_dir, root / "cut", "--max-new-tokens", "4", "--max-thinking-tokens", "4"),
    }


def _folds(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in blocks if str(b.get("more", "")).startswith("thinking trace")]


def test_the_page_data_shows_replies_and_folds_traces(thinking_runs: dict[str, Path], tmp_path: Path) -> None:
    from helpers.reportpage import Page

    report = rv.report(list(thinking_runs.values()), out=tmp_path / "report.html")
    items = Page(report.read_text(encoding="utf-8")).data["matcha-examples"]
    attacked = {
        r["id"]: r
        for r in RunStore.open(thinking_runs["attacked"]).records("matcha_outcome")
        if r["attacked"]
    }
    assert attacked
    shown = [
        i for i in items if i["title"].split(" · ")[0] in attacked and "not attacked" not in str(i["badges"])
    ]
    assert len(shown) == len(attacked)
    for item in shown:
        record = attacked[item["title"].split(" · ")[0]]
        pair = next(
            b["pair"]
            for b in item["blocks"]
            if "pair" in b and b["pair"][0][0] == "clean answer and reasoning"
        )
        assert pair[0][1]["t"] == record["clean_reply"].rstrip()
        assert pair[1][1]["t"] == (record["perturbed_reply"] or "").rstrip()
        (fold,) = _folds(item["blocks"])
        assert "the judge read the replies" in fold["more"]
        traces = fold["blocks"][0]["pair"]
        assert traces[0][1]["t"] == record["clean_thinking"].rstrip()
        assert traces[1][1]["t"] == (record["perturbed_thinking"] or "(no trace)").rstrip()
    cut = [i for i in items if "no answer (thinking truncated)" in str(i["blocks"])]
    assert len(cut) == 3 and all("never closed" in _folds(i["blocks"])[0]["more"] for i in cut)


def test_the_traces_open_when_asked(thinking_runs: dict[str, Path], tmp_path: Path) -> None:
    from helpers.browser import open_report, wait_until_ready

    report = rv.report([thinking_runs["attacked"]], out=tmp_path / "report.html")
    record = next(
        r for r in RunStore.open(thinking_runs["attacked"]).records("matcha_outcome") if r["attacked"]
    )
    with open_report(report, profile=tmp_path / "profile") as opened:
        page = opened.page
        wait_until_ready(page)
        item = page.locator("#matcha-examples .item", has_text=record["id"]).first
        fold = item.locator("details", has=page.locator("summary", has_text="thinking traces")).first
        assert fold.evaluate("d => d.open") is False  # collapsed: the replies are what a reader sees first
        trace = record["clean_thinking"].strip()[:30]
        assert not item.get_by_text(trace, exact=False).first.is_visible()
        fold.locator("summary").click()
        assert fold.evaluate("d => d.open") is True
        assert trace in fold.inner_text()
        assert opened.errors == []
