"""A robustness run's measured meaning preservation: the labels a person gave its edits (``perturb review``),
counted per perturbed set, written into its summary beside each set's accuracy.

Each set's changed texts are read from the run's ``robustness_outcome`` rows, every changed field keyed by its
edit (:func:`~robusteval.perturbations.review.items.edit_key`: method, original and perturbed text), and looked
up in a labels store, whose last label of an edit wins. Per set (``sets[NAME]["preservation"]``): the distinct
edits it made, how many are labelled, and the share labelled same meaning / changed / ungrammatical over the
labelled ones, each with its Wilson 95% interval. ``preservation_labels`` names the store and its hash. Nothing
here reads a model: attaching the same labels again writes the same summary.

With ``preserved_only``, :func:`~robusteval.metrics.robustness.preserved_only_summary` adds each set's accuracy
and the RB-index over the examples whose every edit is labelled same meaning, paired with their originals
(``preserved_only``), beside the headline RB-index, which it never replaces.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.perturbations.review.items import edit_key
from robusteval.perturbations.review.labels import LABEL_NAMES, LABELS, Label, LabelStore, percent

#: The robustness run's command and its outcome stage (:mod:`robusteval.evals.robustness`, which imports this
#: module: named here, not imported, so the two form no import cycle; a test checks they agree).
COMMAND = "robustness"
OUTCOME_STAGE = "robustness_outcome"
#: The summary key naming the labels store a run's preservation was counted from.
LABELS_KEY = "preservation_labels"
#: The summary key of the RB-index over the edits judged the same.
PRESERVED_KEY = "preserved_only"


def row_edits(row: Mapping[str, Any]) -> list[str]:
    """The edit keys of an outcome row's changed fields (none for an example its set left unchanged)."""
    out = []
    for field in (row.get("fields") or {}).values():
        original, perturbed = field.get("original"), field.get("perturbed")
        if isinstance(original, str) and isinstance(perturbed, str) and original != perturbed:
            out.append(edit_key(str(field.get("method") or row.get("set") or ""), original, perturbed))
    return out


def example_verdict(keys: Sequence[str], current: Mapping[str, Label]) -> str | None:
    """One example's label over its edits: "same" when every edit is labelled same meaning, "changed" or
    "ungrammatical" when one is (changed first), None while an edit of it is unlabelled (and none is worse)."""
    labels = {current[key].label for key in keys if key in current}
    for name in ("changed", "ungrammatical"):
        if name in labels:
            return name
    return "same" if keys and all(key in current for key in keys) else None


def set_preservation(rows: Iterable[Mapping[str, Any]], current: Mapping[str, Label]) -> dict[str, dict[str, Any]]:
    """Per set, in row order: ``n_edits`` (distinct edits made), ``n`` (labelled), ``n_unlabelled`` and each
    label's share of the labelled edits (``{"value", "k", "n", "ci95"}``, Wilson)."""
    from robusteval.metrics.stats import proportion

    edits: dict[str, dict[str, None]] = {}
    for row in rows:
        keys = edits.setdefault(str(row.get("set")), {})
        for key in row_edits(row):
            keys.setdefault(key, None)
    out: dict[str, dict[str, Any]] = {}
    for name, keys in edits.items():
        labels = [current[key].label for key in keys if key in current]
        out[name] = {"n_edits": len(keys), "n": len(labels), "n_unlabelled": len(keys) - len(labels),
                     **{label: proportion(labels.count(label), len(labels)) for label in LABELS}}
    return out


def kept_examples(rows: Iterable[Mapping[str, Any]], ids: Sequence[str], current: Mapping[str, Label]
                  ) -> dict[str, list[bool]]:
    """Per set, in the order of ``ids``: whether the example's every edit is labelled same meaning (an example
    the set left unchanged is not kept: it measures the original again)."""
    position = {example_id: i for i, example_id in enumerate(ids)}
    out: dict[str, list[bool]] = {}
    for row in rows:
        flags = out.setdefault(str(row.get("set")), [False] * len(ids))
        index = position.get(str(row.get("id")))
        if index is not None:
            flags[index] = example_verdict(row_edits(row), current) == "same"
    return out


def labels_identity(path: str | os.PathLike[str], current: Mapping[str, Label]) -> dict[str, Any]:
    """What a summary records of the labels store: its path, its sha256 and the edits it labels."""
    from robusteval.store import file_sha256

    return {"path": str(path), "sha256": file_sha256(path), "n_labelled_edits": len(current)}


def attach_preservation(summary: Mapping[str, Any], rows: Sequence[Mapping[str, Any]],
                        labels: str | os.PathLike[str], *, preserved_only: bool = False, seed: int = 0,
                        n_resamples: int = 2000) -> dict[str, Any]:
    """``summary`` with each set's preservation counted from the labels store ``labels`` over the outcome
    ``rows`` (and, with ``preserved_only``, the RB-index over the edits judged the same); a new dict."""
    from robusteval.metrics.robustness import preserved_only_summary

    store = LabelStore(labels)
    if not store.path.is_file():
        raise UserError(f"{store.path}: no such labels store (write one with `robusteval perturb labels "
                        "EXPORT.jsonl --store FILE`)")
    current = store.current()
    # Both blocks are re-made at the end whatever order the summary came in: the same labels, the same bytes.
    out = {key: value for key, value in summary.items() if key not in (LABELS_KEY, PRESERVED_KEY)}
    out["sets"] = {name: {k: v for k, v in dict(entry).items() if k != "preservation"}
                   for name, entry in (summary.get("sets") or {}).items()}
    for name, block in set_preservation(rows, current).items():
        if name in out["sets"] and block["n"]:  # a set none of whose edits is labelled says nothing
            out["sets"][name]["preservation"] = block
    out[LABELS_KEY] = labels_identity(store.path, current)
    if preserved_only:
        ids = list(dict.fromkeys(str(row.get("id")) for row in rows))
        first: dict[str, bool] = {}
        by_set: dict[str, dict[str, bool]] = {}
        for row in rows:
            first.setdefault(str(row.get("id")), bool(row.get("correct_original")))
            by_set.setdefault(str(row.get("set")), {})[str(row.get("id"))] = bool(row.get("correct"))
        names = [name for name in out["sets"] if name in by_set]
        kept = kept_examples(rows, ids, current)
        out[PRESERVED_KEY] = preserved_only_summary(
            [first[i] for i in ids], {name: [by_set[name].get(i, False) for i in ids] for name in names},
            {name: kept.get(name, [False] * len(ids)) for name in names},
            sets=[name for name in names if out["sets"][name].get("in_index", True)],
            seed=seed, n_resamples=n_resamples)
    return out


def attach_labels(run_dir: str | os.PathLike[str], labels: str | os.PathLike[str], *,
                  preserved_only: bool | None = None, n_resamples: int = 2000) -> dict[str, Any]:
    """Count a finished robustness run's preservation from the labels store ``labels`` and rewrite its
    summary.json (unchanged when nothing changed). ``preserved_only``: None keeps the run's choice (a summary
    that has the preserved-only RB-index gets it again, counted from these labels)."""
    from robusteval.seeding import DEFAULT_SEED, derive_seed
    from robusteval.store import RunStore

    path = Path(run_dir)
    with RunStore.open_existing(path) as reader:
        identity = reader.identity
    if identity.get("command") != COMMAND:
        raise UserError(f"{path}: a {identity.get('command')} run; labels attach to robustness runs")
    with RunStore.open(path, identity=identity) as store:
        summary = store.get_meta("summary")
        if not isinstance(summary, dict) or "sets" not in summary:
            raise UserError(f"{path}: the run has no summary yet: finish it first (re-run its command)")
        rows = store.records(OUTCOME_STAGE)
        if not rows:
            raise UserError(f"{path}: the run stored no outcome rows (made before they were stored): re-run its "
                            "command to store them, then attach the labels")
        seeds = summary.get("seeds") or {}
        boot = derive_seed(int(seeds.get("bootstrap_seed", DEFAULT_SEED)), "robustness-bootstrap")
        want = PRESERVED_KEY in summary if preserved_only is None else preserved_only
        updated = attach_preservation(summary, rows, labels, preserved_only=want, seed=boot,
                                      n_resamples=n_resamples)
        # As summary.json holds it (tuples become lists), so the caller sees what a reader will see.
        updated = json.loads(json.dumps(updated, ensure_ascii=False, default=str))
        store.write_summary(updated)
    return updated


def preservation_text(block: Mapping[str, Any]) -> str:
    """``same meaning 41/50 = 82% [69, 90]``: a set's share of labelled edits judged the same, with n and its
    Wilson interval ("" where none of its edits is labelled)."""
    if not block or not block.get("n"):
        return ""
    return f"{LABEL_NAMES['same']} {percent(block['same'])}"


def preservation_detail(block: Mapping[str, Any]) -> str:
    """Every label's share and how many edits are unlabelled: ``same meaning 4/5 = 80% [..]; changed ...;
    ungrammatical ...; 2 of 7 edits unlabelled``."""
    if not block or not block.get("n"):
        return ""
    parts = [f"{LABEL_NAMES[name]} {percent(block[name])}" for name in LABELS]
    if block.get("n_unlabelled"):
        parts.append(f"{block['n_unlabelled']} of {block.get('n_edits')} edits unlabelled")
    return "; ".join(parts)


def preservation_lines(summary: Mapping[str, Any], *, with_preserved: bool = True) -> list[str]:
    """One line per set with labels (``W-synonym: same meaning ... (labels: FILE)``) and, where the summary has
    it, the preserved-only RB-index on a line of its own."""
    from robusteval.metrics.robustness import preserved_line

    lines = [f"{name}: {preservation_detail(entry['preservation'])}"
             for name, entry in (summary.get("sets") or {}).items() if entry.get("preservation")]
    if lines and summary.get(LABELS_KEY):
        lines.append(f"(preservation: labels of {summary[LABELS_KEY].get('path')}, judged by a person, per "
                     "distinct edit, the last label of an edit counted)")
    if with_preserved and summary.get(PRESERVED_KEY):
        lines.append(preserved_line(summary[PRESERVED_KEY]))
    return lines
