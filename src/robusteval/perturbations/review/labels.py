"""Labels a person gave in the review page, and the preservation rate they measure.

The page exports one JSON line per labelled edit (:data:`LABELS`). :func:`read_export` reads such a file
back, checking each line's key against its texts (a line edited by hand, or taken from another method, is
refused with its line number). A :class:`LabelStore` is a JSON Lines file the labels are appended to; read
back, the **last** label of a key wins, so a relabelled edit counts once, with its latest label.
:func:`preservation` turns the labels into per-method rates with n and a Wilson 95% interval.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.perturbations.review.items import edit_key

#: The labels, in the page's key order (1, 2, 3), with what each means.
LABELS = {
    "same": "same meaning: a reader answers the question exactly as before",
    "changed": "changed: the edit changes what the text says (another sense, fact, polarity or scope)",
    "ungrammatical": "ungrammatical: the text no longer reads as a sentence of the language",
}
LABEL_NAMES = {"same": "same meaning", "changed": "changed", "ungrammatical": "ungrammatical"}


@dataclass(frozen=True)
class Label:
    key: str
    method: str
    label: str
    original: str
    perturbed: str
    example_id: str = ""
    field: str = "text"
    sample: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "method": self.method, "label": self.label, "original": self.original,
                "perturbed": self.perturbed, "example_id": self.example_id, "field": self.field,
                "sample": self.sample}


def label_from_dict(data: Any, where: str) -> Label:
    """A label from one exported or stored line; ``where`` names the line in the error of a bad one."""
    if not isinstance(data, Mapping):
        raise UserError(f"{where}: not a JSON object")
    for name in ("method", "label", "original", "perturbed"):
        if not isinstance(data.get(name), str):
            raise UserError(f"{where}: field '{name}' must be a string")
    if data["label"] not in LABELS:
        raise UserError(f"{where}: field 'label' is {data['label']!r}; one of: {', '.join(LABELS)}")
    key = edit_key(data["method"], data["original"], data["perturbed"])
    if data.get("key") is not None and data.get("key") != key:
        raise UserError(f"{where}: field 'key' {data.get('key')!r} does not match its method and texts "
                        f"({key}): the line was changed after export")
    return Label(key, data["method"], data["label"], data["original"], data["perturbed"],
                 str(data.get("example_id") or ""), str(data.get("field") or "text"), str(data.get("sample") or ""))


def read_labels(path: str | os.PathLike[str]) -> list[Label]:
    """Every label line of ``path`` (a page export or a labels store), in file order."""
    file = Path(path)
    if not file.is_file():
        raise UserError(f"{file}: no such labels file")
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise UserError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{file}:{number}: not JSON ({exc.msg})") from None
        out.append(label_from_dict(data, f"{file}:{number}"))
    return out


def read_export(path: str | os.PathLike[str]) -> list[Label]:
    """The labels of a file the review page exported."""
    return read_labels(path)


def latest(labels: Iterable[Label]) -> dict[str, Label]:
    """key -> its last label: a relabelled edit counts once, with the label given last."""
    out: dict[str, Label] = {}
    for label in labels:
        out.pop(label.key, None)  # re-insert: the dict's order is the order of the latest labels
        out[label.key] = label
    return out


class LabelStore:
    """A JSON Lines file of labels, appended to; :meth:`current` is the last label of each edit."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def all(self) -> list[Label]:
        return read_labels(self.path) if self.path.exists() else []

    def current(self) -> dict[str, Label]:
        return latest(self.all())

    def labelled_keys(self) -> set[str]:
        return set(self.current())

    def add(self, labels: Sequence[Label]) -> tuple[int, int]:
        """Append ``labels`` whose latest label differs from the store's; (new edits, relabelled edits).
        A label the store already holds for the edit is not written again."""
        current = self.current()
        fresh = [label for label in latest(labels).values()
                 if label.key not in current or current[label.key].label != label.label]
        if fresh:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                for label in fresh:
                    handle.write(json.dumps(label.to_dict(), ensure_ascii=False) + "\n")
        relabelled = sum(1 for label in fresh if label.key in current)
        return len(fresh) - relabelled, relabelled


def preservation(labels: Iterable[Label]) -> dict[str, dict[str, Any]]:
    """Per method (sorted), over each edit's latest label: n and each label's share with its Wilson 95%
    interval (``{"n", "same": {"value", "k", "n", "ci95"}, "changed": ..., "ungrammatical": ...}``)."""
    from robusteval.metrics.stats import proportion

    by_method: dict[str, list[str]] = {}
    for label in latest(labels).values():
        by_method.setdefault(label.method, []).append(label.label)
    out: dict[str, dict[str, Any]] = {}
    for method in sorted(by_method):
        values = by_method[method]
        out[method] = {"n": len(values), **{name: proportion(values.count(name), len(values)) for name in LABELS}}
    return out


def percent(share: Mapping[str, Any]) -> str:
    """``41/50 = 82% [69, 90]``: a share with its count and Wilson interval in percent."""
    from robusteval.metrics.formatting import format_rate

    return f"{share['k']}/{share['n']} = " + format_rate(share["value"], share["ci95"], scale=100, digits=0, unit="%")


def preservation_lines(rates: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per method: ``W-synonym: same meaning 41/50 = 82% [69, 90]; changed ...; ungrammatical ...``."""
    return [f"{method}: " + "; ".join(f"{LABEL_NAMES[name]} {percent(rate[name])}" for name in LABELS)
            for method, rate in rates.items()]
