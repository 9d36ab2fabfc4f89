"""The review page in a real headless Chromium (Debian's chromium, driven by Playwright): keys label and move,
progress counts, labels survive a reload (localStorage), the export downloads a file that the library and
``perturb labels`` read back, a reviewed edit is not sampled again, and a hostile text shows as text with no
script run and no request made."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.browser import open_report
from helpers.runs import cli_inproc
from robusteval.data.example import Example
from robusteval.perturbations import Protection, build_perturbation
from robusteval.perturbations.dataset import perturb_examples
from robusteval.perturbations.review import LabelStore, read_export

HOSTILE = "<script>window.pwned=1</script></textarea><img src=x onerror=\"window.pwned=2\">"
SENTENCES = [f"Sentence number {word} tells how the farmer sold {word} apples at the market on Monday."
             for word in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
                          "juliet", "kilo", "lima")]
READY = "document.body.dataset.ready === 'true'"


def perturbed_file(path: Path) -> Path:
    plain = [Example(f"q{i}", text, "yes", "yesno", {}) for i, text in enumerate(SENTENCES)]
    hostile = [Example("evil", f"Does the farmer {HOSTILE} sell apples and pears at the market?", "yes", "yesno",
                       {})]
    records = [r.to_record(seed=0, budget=None)
               for r in perturb_examples(plain, build_perturbation("C-swap", "en"), fields=["text"])]
    # The hostile markup is protected, so it reaches both panes verbatim; the words around it change.
    records += [r.to_record(seed=0, budget=None)
                for r in perturb_examples(hostile, build_perturbation("C-delete", "en"), fields=["text"],
                                          protect=Protection(words=frozenset({HOSTILE})))]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def progress(page) -> str:  # type: ignore[no-untyped-def]
    return str(page.locator("#progress").inner_text())


def test_keys_label_the_export_round_trips_and_hostile_text_stays_text(tmp_path: Path) -> None:
    data = perturbed_file(tmp_path / "perturbed.jsonl")
    page_path, store = tmp_path / "review.html", tmp_path / "labels.jsonl"
    made = cli_inproc("perturb", "review", str(data), "--n", "6", "--seed", "2", "--out", str(page_path),
               "--store", str(store))
    assert made.returncode == 0, made.stderr
    assert "C-delete 1/1, C-swap 5/12" in made.stdout
    with open_report(page_path, profile=tmp_path / "profile") as opened:
        page = opened.page
        page.wait_for_function(READY)
        keys = page.eval_on_selector_all("article.item", "items => items.map(i => i.dataset.key)")
        assert len(keys) == 6 and progress(page) == "0 / 6 labelled"
        # 1 same -> next, 2 changed -> next, 3 ungrammatical -> next; k goes back; 1 relabels it; j skips one.
        for key in ["1", "2", "3", "k", "1", "j", "1"]:
            page.keyboard.press(key)
        assert progress(page) == "4 / 6 labelled"
        assert page.eval_on_selector_all("article.item", "items => items.map(i => i.dataset.label || '')") == [
            "same", "changed", "same", "", "same", ""]
        assert page.locator("article.item.current").get_attribute("id") == "item-5"
        page.reload()
        page.wait_for_function(READY)
        assert progress(page) == "4 / 6 labelled"  # kept in the browser
        with page.expect_download() as info:
            page.keyboard.press("e")
        exported = tmp_path / "export.jsonl"
        info.value.save_as(str(exported))
        assert info.value.suggested_filename.startswith("review-") and info.value.suggested_filename.endswith(
            ".labels.jsonl")
        # The hostile text is shown as characters, in both panes, and nothing in it ran or loaded.
        evil = page.locator("article.item", has_text="C-delete")
        assert evil.count() == 1
        panes = evil.locator(".pane .text").all_inner_texts()
        assert len(panes) == 2 and all(HOSTILE in text for text in panes)
        assert page.evaluate("window.pwned === undefined")
        assert page.locator("main img, main script, main textarea").count() == 0
        assert opened.errors == []
        assert all(url.startswith(("file:", "blob:")) for url in opened.requests), opened.requests
    labels = read_export(exported)
    assert [(lab.key, lab.label) for lab in labels] == [(keys[0], "same"), (keys[1], "changed"),
                                                         (keys[2], "same"), (keys[4], "same")]
    read = cli_inproc("perturb", "labels", str(exported), "--store", str(store))
    assert read.returncode == 0, read.stderr
    assert "4 new labels, 0 relabelled" in read.stdout
    assert LabelStore(store).labelled_keys() == {keys[0], keys[1], keys[2], keys[4]}
    # The next page never asks a reviewed edit again.
    again = cli_inproc("perturb", "review", str(data), "--n", "50", "--out", str(tmp_path / "next.html"),
                "--store", str(store))
    assert again.returncode == 0, again.stderr
    assert "4 already labelled, left out" in again.stdout
    shown = (tmp_path / "next.html").read_text(encoding="utf-8")
    assert not any(key in shown for key in LabelStore(store).labelled_keys())
