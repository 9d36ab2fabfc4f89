"""Preservation rates from hand-labelled review samples (``bench/data/*_review.tsv``, written with
``robusteval perturb review`` and labelled by the developer; each file's header states the rule followed), and
how the rate moves under each constraint: of the labelled edits, those ``--keep-pos`` admits and those the
``--min-similarity 0.96`` gate admits (the replaced word scored alone in its sentence, as the gate scores a
word's first pick), each share with its n and Wilson 95% interval.

The tables hold word pairs and offsets, not sentences: the script re-creates the perturbed file (the command
in the header; deterministic) and checks each row's edit key against it.

    python bench/review_rates.py --ocnli ../shared/data/ocnli/dev.json
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path

from robusteval.data.spec import DataSpec
from robusteval.perturbations.base import Edit
from robusteval.perturbations.constraints import PartOfSpeech
from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset
from robusteval.perturbations.review import Label, load_items, preservation, preservation_lines
from robusteval.perturbations.segment import Language, Span
from robusteval.perturbations.similarity import SimilarityGate, measure_label
from robusteval.perturbations.spec import PerturbationSpec

DATA = Path(__file__).resolve().parent / "data"
#: file -> (method, language, how the perturbed file was made: limit, seed, min_changes, max_changes; whether
#: the word constraints --keep-pos and --min-similarity apply to the method's edits)
SAMPLES: dict[str, tuple[str, Language, int, int, int | None, int, bool]] = {
    "zh_synonym_review.tsv": ("W-synonym", "zh", 80, 1, None, 1, True),
    "zh_traditional_review.tsv": ("C-traditional", "zh", 80, 1, 1, 1, False),
    "zh_pinyin_review.tsv": ("C-pinyin", "zh", 80, 1, 1, 1, False),
    "zh_radical_review.tsv": ("C-radical", "zh", 80, 1, 1, 1, False),
    "zh_morphonym_review.tsv": ("C-morphonym", "zh", 80, 1, 1, 1, False),
    "zh_shuffle_review.tsv": ("C-shuffle", "zh", 80, 1, 1, 1, False),
    "zh_homophone_review.tsv": ("W-homophone", "zh", 80, 1, 1, 1, True),
    "zh_char_homophone_review.tsv": ("C-homophone", "zh", 80, 1, 1, 1, False),
    "zh_keyboard_review.tsv": ("C-keyboard", "zh", 80, 1, 1, 1, False),
}
MINIMUM = 0.96


def read_rows(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def labelled_items(name: str, ocnli: str) -> list[tuple[Label, Edit]]:
    method, language, limit, seed, min_changes, max_changes, _ = SAMPLES[name]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "perturbed.jsonl"
        config = PerturbConfig(data=DataSpec("ocnli", ocnli, limit=limit), method=method, seed=seed,
                               perturbation=PerturbationSpec(language=language, min_changes=min_changes,
                                                             max_changes=max_changes))
        perturb_dataset(config, out)
        items = {item.key: item for item in load_items(out)}
    out_rows = []
    for row in read_rows(DATA / name):
        item = items.get(row["key"])
        if item is None:
            raise SystemExit(f"{name}: edit {row['key']} ({row['original']} -> {row['replacement']}) is not in "
                             "the re-created file: the method or its data changed since labelling")
        start = int(row["start"])
        if item.original[start:start + len(row["original"])] != row["original"]:
            raise SystemExit(f"{name}: edit {row['key']}: the text at offset {start} is not {row['original']}")
        label = Label(item.key, item.method, row["label"], item.original, item.perturbed, item.example_id,
                      item.field)
        out_rows.append((label, Edit(start, start + len(row["original"]), row["original"], row["replacement"])))
    return out_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ocnli", required=True, help="OCNLI dev.json")
    args = parser.parse_args()
    for name, (method, language, *_rest, constrained) in SAMPLES.items():
        rows = labelled_items(name, args.ocnli)
        print(f"## {name}: {method} ({language})")
        if not constrained:
            labels = [label for label, _ in rows]
            print(f"all labelled edits ({len(labels)}): " + " ".join(preservation_lines(preservation(labels))))
            continue
        pos = PartOfSpeech(language)
        gate = SimilarityGate(MINIMUM, language)
        scores = [gate.edit_scores(label.original, [[edit]])[0] for label, edit in rows]
        kept_pos = [pos.allows(label.original, Span(edit.start, edit.end, edit.original), edit.replacement)
                    for label, edit in rows]
        kept_gate = [score >= MINIMUM for score in scores]
        variants = {
            "all labelled edits": [True] * len(rows),
            "--keep-pos admits": kept_pos,
            f"--min-similarity {MINIMUM} admits ({measure_label(language)})": kept_gate,
            f"--keep-pos and --min-similarity {MINIMUM} admit": [a and b for a, b in zip(kept_pos, kept_gate,
                                                                                      strict=True)],
        }
        for title, keep in variants.items():
            labels = [label for (label, _), k in zip(rows, keep, strict=True) if k]
            print(f"{title} ({len(labels)}/{len(rows)} edits): " + " ".join(preservation_lines(preservation(labels))))


if __name__ == "__main__":
    main()
