"""docs/perturbations.md's preservation table is bench/review_rates.py's output: every labelled sample in
bench/data has its row, with the shares its labels give (recomputed here from the files, so a relabelled edit
or a table edited by hand fails), and every label is one of the three."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from robusteval.metrics.stats import proportion
from robusteval.perturbations.review.labels import LABELS, percent

ROOT = Path(__file__).resolve().parents[2]
HEADER = re.compile(r"^# (?P<method>[A-Z]-[\w-]+) \((?P<language>zh|en)\) on ")


def samples() -> list[Path]:
    found = sorted((ROOT / "bench" / "data").glob("*_review.tsv"))
    assert len(found) >= 19  # 9 Chinese character/word methods + W-wordembedding (zh) + 9 English
    return found


def table_rows() -> list[list[str]]:
    text = (ROOT / "docs" / "perturbations.md").read_text(encoding="utf-8")
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ")]


def test_every_sample_has_its_row_with_the_rates_its_labels_give() -> None:
    rows = table_rows()
    for path in samples():
        lines = path.read_text(encoding="utf-8").splitlines()
        match = HEADER.match(lines[0])
        assert match, f"{path.name}: the first line names the method and language"
        labels = [row["label"] for row in csv.DictReader([line for line in lines if not line.startswith("#")],
                                                         delimiter="\t")]
        assert set(labels) <= set(LABELS) and len(labels) >= 50, path.name
        n = len(labels)
        shares = [percent(proportion(labels.count(name), n)) for name in LABELS]
        lost = percent(proportion(n - labels.count("same"), n))
        name = f"{match['method']} ({match['language']})"
        expected = [name, f"{n}/{n}", *shares, lost]
        assert any([row[0], *row[2:]] == expected for row in rows if len(row) == 7), \
            f"{path.name}: no row {expected} in docs/perturbations.md (paste bench/review_rates.py's table)"
