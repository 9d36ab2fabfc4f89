"""The review page: one self-contained HTML file on which a person labels sampled edits with the keyboard.

Everything is inline (style, script, the items as a JSON block); a Content Security Policy allows only that
style and script, by hash, and no request at all. The items' texts travel in a ``<script
type="application/json">`` block with ``<``, ``>`` and ``&`` written as ``\\u`` escapes (no text can close
it), and the script puts them into the page only as text nodes (``textContent``): a question holding
``<script>`` or ``</textarea>`` shows as those characters and runs nothing.

Each item shows the original and the perturbed text side by side with a character diff highlighted
(:func:`char_diff`). Labels are kept in the browser's ``localStorage`` under the sample's id, so a reload
or a second session resumes, and exported as a JSON Lines download that
:func:`robusteval.perturbations.review.labels.read_export` reads back.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import json
import os
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.perturbations.review.labels import LABEL_NAMES, LABELS
from robusteval.perturbations.review.sampling import Sample

#: The page's ``localStorage`` key is this prefix and the sample id.
STORAGE_PREFIX = "robusteval-review:"


def char_diff(original: str, perturbed: str) -> list[list[str]]:
    """``[op, original part, perturbed part]`` runs, op one of equal/replace/delete/insert (difflib's
    opcodes over characters, no junk heuristic)."""
    matcher = difflib.SequenceMatcher(None, original, perturbed, autojunk=False)
    return [[op, original[i1:i2], perturbed[j1:j2]] for op, i1, i2, j1, j2 in matcher.get_opcodes()]


def asset(name: str) -> str:
    return (resources.files("robusteval.perturbations.review") / "assets" / name).read_text(encoding="utf-8")


def script_safe(text: str) -> str:
    """JSON text that nothing can end early inside ``<script type="application/json">``."""
    for char, code in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"),
                       ("\u2029", "\\u2029")):
        text = text.replace(char, code)
    return text


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def page_data(sample: Sample, *, title: str, sources: list[str]) -> dict[str, Any]:
    """What the page's script reads: the sample id, the labels and the items with their diffs."""
    return {
        "sample": sample.sample_id,
        "storage_key": STORAGE_PREFIX + sample.sample_id,
        "title": title,
        "sources": sources,
        "labels": [{"name": name, "title": LABEL_NAMES[name], "help": LABELS[name]} for name in LABELS],
        "items": [{"key": item.key, "method": item.method, "example_id": item.example_id, "field": item.field,
                   "original": item.original, "perturbed": item.perturbed,
                   "diff": char_diff(item.original, item.perturbed)} for item in sample.items],
    }


def render_page(sample: Sample, *, title: str = "Review perturbed edits", sources: list[str] | None = None) -> str:
    style, script = asset("review.css"), asset("review.js")
    policy = (f"default-src 'none'; style-src {_csp_hash(style)}; script-src {_csp_hash(script)}; "
              "base-uri 'none'; form-action 'none'")
    data = script_safe(json.dumps(page_data(sample, title=title, sources=sources or []), ensure_ascii=False,
                                  separators=(",", ":")))
    keys = " · ".join(f"<kbd>{i}</kbd> {escape(LABEL_NAMES[name])}" for i, name in enumerate(LABELS, 1))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{style}</style></head><body>"
            f"<header><h1>{escape(title)}</h1>"
            f'<p class="meta">sample <code>{escape(sample.sample_id)}</code>, seed {sample.seed}, '
            f"{len(sample.items)} edits from {escape(', '.join(sources or []))}</p>"
            '<p class="bar"><span id="progress" role="status" aria-live="polite">0 / '
            f'{len(sample.items)} labelled</span> <button id="export" type="button">Export labels (JSONL)'
            "</button></p>"
            f'<p class="keys">{keys} · <kbd>j</kbd>/<kbd>↓</kbd>/<kbd>→</kbd> next · <kbd>k</kbd>/<kbd>↑</kbd>/'
            "<kbd>←</kbd> previous · <kbd>0</kbd> clear · <kbd>e</kbd> export. Labels stay in this browser "
            "until exported; read the export back with <code>robusteval perturb labels FILE</code>.</p>"
            '</header><main id="items"></main>'
            f'<script type="application/json" id="review-data">{data}</script>'
            f"<script>{script}</script></body></html>\n")


def write_page(sample: Sample, out: str | os.PathLike[str], *, title: str = "Review perturbed edits",
               sources: list[str] | None = None) -> Path:
    from robusteval.store import write_text_atomic

    return write_text_atomic(out, render_page(sample, title=title, sources=sources))
