"""Preservation rates from hand-labelled review samples (``bench/data/*_review.tsv``, labelled by the developer;
each file's header states the rule followed), and how the rate moves under each constraint: of the labelled
edits, those each setting still makes (``--keep-pos``, ``--synonym-senses one``, ``--radical-strokes drop``, the
defaults now, and the ``--min-similarity`` gate scoring each edit alone in its sentence), each share with its n
and Wilson 95% interval. Ends with the markdown table docs/perturbations.md holds (pasted there; a test checks
every sample's row against its labels).

The tables hold word pairs and offsets, not sentences: the script re-creates the perturbed files (the settings
in ``SAMPLES``, made before the defaults, ``BEFORE_DEFAULTS``; deterministic: OCNLI dev for Chinese, the bundled
English sample ``math.jsonl`` + ``yesno.jsonl`` for English) and checks each row's edit key and offset.

    python bench/review_rates.py --ocnli ../shared/data/ocnli/dev.json            # every table
    python bench/review_rates.py --ocnli ... --draft en_synonym_review.tsv         # a new sample to label
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.data.spec import DataSpec
from robusteval.perturbations.base import Edit
from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset
from robusteval.perturbations.review import Label, ReviewItem, load_items, preservation, preservation_lines
from robusteval.perturbations.review.labels import LABELS, percent
from robusteval.perturbations.review.sampling import sample_items
from robusteval.perturbations.segment import Language, Span
from robusteval.perturbations.similarity import SimilarityGate, measure_label

DATA = Path(__file__).resolve().parent / "data"
#: The similarity gate's minimum measured per language (Chinese: the local e5 cosine of a word's window;
#: English: the MiniLM cosine of the whole sentence).
MINIMUM: dict[str, float] = {"zh": 0.96, "en": 0.96}
#: Settings the labelled files were made with that later became defaults and must be undone to re-create them:
#: every sample was labelled as the methods made their edits before the part-of-speech and one-sense defaults.
BEFORE_DEFAULTS: dict[str, Any] = {"keep_pos": False, "synonym_senses": "all", "radical_strokes": "keep"}
#: A setting's value that stands for the shipped Gemma 3 270M (``robusteval.models.embedded``), resolved on use.
EMBEDDED = "<embedded Gemma 3 270M>"


@dataclass(frozen=True)
class Sample:
    """How one labelled file's perturbed texts were made: ``method`` over OCNLI dev's first ``limit`` examples
    (zh) or the bundled English sample (en), once per seed (the items pooled), ``min_changes``/``max_changes``
    as given; ``constrained``: a default constraint applies to its edits (word methods: --keep-pos,
    --synonym-senses, and the --min-similarity gate is measured beside them; C-radical: --radical-strokes)."""

    method: str
    language: Language
    limit: int | None = 80
    seeds: tuple[int, ...] = (1,)
    min_changes: int | None = 1
    max_changes: int = 1
    constrained: bool = False
    settings: dict[str, Any] = field(default_factory=dict)


SAMPLES: dict[str, Sample] = {
    "zh_synonym_review.tsv": Sample("W-synonym", "zh", min_changes=None, constrained=True),
    "zh_traditional_review.tsv": Sample("C-traditional", "zh"),
    "zh_pinyin_review.tsv": Sample("C-pinyin", "zh"),
    "zh_radical_review.tsv": Sample("C-radical", "zh", constrained=True),
    "zh_morphonym_review.tsv": Sample("C-morphonym", "zh"),
    "zh_shuffle_review.tsv": Sample("C-shuffle", "zh"),
    "zh_homophone_review.tsv": Sample("W-homophone", "zh", constrained=True),
    "zh_char_homophone_review.tsv": Sample("C-homophone", "zh"),
    "zh_keyboard_review.tsv": Sample("C-keyboard", "zh"),
    # No Chinese word vectors ship offline: the neighbours are the shipped Gemma 3 270M's token embeddings.
    "zh_wordembedding_review.tsv": Sample("W-wordembedding", "zh", constrained=True,
                                          settings={"embedding_model": EMBEDDED}),
    **{f"en_{name}_review.tsv": Sample(method, "en", limit=None, seeds=(1, 2), constrained=method.startswith("W-"))
       for name, method in (("delete", "C-delete"), ("insert", "C-insert"), ("keyboard", "C-keyboard"),
                            ("morphonym", "C-morphonym"), ("ocr", "C-ocr"), ("shuffle", "C-shuffle"),
                            ("swap", "C-swap"), ("synonym", "W-synonym"), ("wordembedding", "W-wordembedding"))},
}
#: The bundled English sample: file name -> answer type.
ENGLISH = {"math.jsonl": "number", "yesno.jsonl": "label"}
#: How many edits a new sample draws (``--draft``).
SAMPLE_SIZE = 50


def read_rows(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def _sources(sample: Sample, ocnli: str) -> list[DataSpec]:
    if sample.language == "zh":
        return [DataSpec("ocnli", ocnli, limit=sample.limit)]
    root = resources.files("robusteval.data") / "samples"
    return [DataSpec("jsonl", str(root / name), answer_type=kind, limit=sample.limit) for name, kind in ENGLISH.items()]


def _resolve(value: Any) -> Any:
    if value == EMBEDDED:
        from robusteval.models.embedded import embedded_model_spec

        return embedded_model_spec()
    return value


def recreate(sample: Sample, ocnli: str) -> list[ReviewItem]:
    """The sample's perturbed fields, re-made with its settings: every source and seed, each edit once."""
    from robusteval.perturbations.spec import PerturbationSpec

    settings = {**BEFORE_DEFAULTS, **{name: _resolve(value) for name, value in sample.settings.items()}}
    items: dict[str, ReviewItem] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for number, data in enumerate(_sources(sample, ocnli)):
            for seed in sample.seeds:
                out = Path(tmp) / f"perturbed-{number}-{seed}.jsonl"
                spec = PerturbationSpec(language=sample.language, min_changes=sample.min_changes,
                                        max_changes=sample.max_changes, **settings)
                perturb_dataset(PerturbConfig(data=data, method=sample.method, seed=seed, perturbation=spec), out)
                for item in load_items(out):
                    items.setdefault(item.key, item)
    return list(items.values())


def labelled_items(name: str, ocnli: str) -> list[tuple[Label, Edit]]:
    items = {item.key: item for item in recreate(SAMPLES[name], ocnli)}
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


def draft(name: str, ocnli: str) -> None:
    """Print a new sample's rows, label column empty, each followed by its texts as a comment (to label; the
    comments are removed before the file is written where the texts may not be shipped)."""
    sample = sample_items(recreate(SAMPLES[name], ocnli), SAMPLE_SIZE, seed=0)
    print("key\texample_id\tfield\tstart\toriginal\treplacement\tlabel")
    for item in sample.items:
        if len(item.edits) != 1:
            raise SystemExit(f"{name}: {item.key} holds {len(item.edits)} edits; labels are per edit")
        edit = item.edits[0]
        print(f"{item.key}\t{item.example_id}\t{item.field}\t{edit['start']}\t{edit['original']}\t"
              f"{edit['replacement']}\t")
        print(f"#   {item.original}\n#   {item.perturbed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ocnli", required=True, help="OCNLI dev.json")
    parser.add_argument("--draft", metavar="FILE", choices=sorted(SAMPLES),
                        help="print the sample to label for this file of SAMPLES instead of the rates")
    args = parser.parse_args()
    if args.draft:
        draft(args.draft, args.ocnli)
        return
    table = []
    for name, sample in SAMPLES.items():
        if not (DATA / name).is_file():
            print(f"## {name}: not labelled yet", file=sys.stderr)
            continue
        rows = labelled_items(name, args.ocnli)
        print(f"## {name}: {sample.method} ({sample.language})")
        variants = constraint_rows(sample, rows) if sample.constrained else {"default (all labelled edits)": [True] * len(rows)}
        for title, keep in variants.items():
            labels = [label for (label, _), k in zip(rows, keep, strict=True) if k]
            print(f"{title} ({len(labels)}/{len(rows)} edits): " + " ".join(preservation_lines(preservation(labels))))
            table.append(table_row(f"{sample.method} ({sample.language})", title, labels, len(rows)))
    print("\n| method | setting | edits kept | same meaning | changed | ungrammatical | not same (changed or lost) |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(table))


def table_row(method: str, setting: str, labels: list[Label], labelled: int) -> str:
    """One markdown row: the shares of ``labels`` (the edits a setting keeps of ``labelled``), and the share
    not judged the same (changed or ungrammatical) with its own Wilson interval."""
    from robusteval.metrics.stats import proportion

    rate = preservation(labels).get(labels[0].method) if labels else None
    if rate is None:
        return f"| {method} | {setting} | 0/{labelled} | - | - | - | - |"
    lost = proportion(rate["n"] - rate["same"]["k"], rate["n"])
    cells = [percent(rate[name]) for name in LABELS]
    return f"| {method} | {setting} | {rate['n']}/{labelled} | " + " | ".join(cells) + f" | {percent(lost)} |"

def _made(sample: Sample, rows: list[tuple[Label, Edit]], **options: Any) -> list[bool]:
    """Whether the method, built with ``options``, still offers each labelled edit's replacement for its word
    (a refused edit drops out: the setting would have made another edit there, or none)."""
    from robusteval.perturbations.registry import MethodOptions, build_perturbation

    settings = {name: _resolve(value) for name, value in sample.settings.items() if name in ("embedding_model",)}
    method = build_perturbation(sample.method, sample.language, MethodOptions(**settings, **options))
    rng = random.Random(0)
    return [edit.replacement in method.candidates(label.original, Span(edit.start, edit.end, edit.original), rng)
            for label, edit in rows]


def constraint_rows(sample: Sample, rows: list[tuple[Label, Edit]]) -> dict[str, list[bool]]:
    """Which labelled edits each setting still makes: the defaults before and now, each constraint alone,
    and the similarity gate (each edit scored alone in its sentence, as the gate scores a word's first pick)."""
    if sample.method == "C-radical":
        return {"before (every split; all labelled edits)": [True] * len(rows),
                "default now (--radical-strokes drop)": _made(sample, rows, bare_strokes=False)}
    language = sample.language
    minimum = MINIMUM[language]
    gate = SimilarityGate(minimum, language)
    kept_gate = [gate.edit_scores(label.original, [[edit]])[0] >= minimum for label, edit in rows]
    synonym = sample.method == "W-synonym"
    now = _made(sample, rows, keep_pos=True, one_sense=synonym)
    variants = {
        "before (no constraint; all labelled edits)": [True] * len(rows),
        "--keep-pos": _made(sample, rows, keep_pos=True),
        **({"--synonym-senses one": _made(sample, rows, one_sense=True)} if synonym else {}),
        "default now (--keep-pos" + (" --synonym-senses one)" if synonym else ")"): now,
        f"--min-similarity {minimum} ({measure_label(language)})": kept_gate,
        f"default now and --min-similarity {minimum}": [a and b for a, b in zip(now, kept_gate, strict=True)],
    }
    return variants

if __name__ == "__main__":
    main()
