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
from robusteval.perturbations.review import Label, ReviewItem, load_items
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


def constraint_flags(name: str, ocnli: str, *, scores: bool = True) -> list[dict[str, str]]:
    """Per labelled edit of a constrained sample: whether each setting still makes it ("1"/"0") and, for the
    word methods with ``scores``, the similarity gate's score of the edit alone in its sentence (a row of
    :data:`FLAGS`; "" without)."""
    sample = SAMPLES[name]
    rows = labelled_items(name, ocnli)
    score: list[float | None] = [None] * len(rows)
    if sample.method == "C-radical":
        flags = {"default": _made(sample, rows, bare_strokes=False)}
    else:
        synonym = sample.method == "W-synonym"
        if scores:
            gate = SimilarityGate(MINIMUM[sample.language], sample.language)
            score = [gate.edit_scores(label.original, [[edit]])[0] for label, edit in rows]
        flags = {"keep_pos": _made(sample, rows, keep_pos=True),
                 **({"synonym_senses_one": _made(sample, rows, one_sense=True)} if synonym else {}),
                 "default": _made(sample, rows, keep_pos=True, one_sense=synonym)}
    return [{"file": name, "key": label.key,
             **{column: str(int(flags[column][i])) if column in flags else "" for column in FLAG_COLUMNS},
             "score": "" if score[i] is None else f"{score[i]:.4f}"}
            for i, (label, _) in enumerate(rows)]


#: Generated by ``--ocnli`` (every sample re-created), read by :func:`tables`.
FLAGS = DATA / "review_constraints.tsv"
FLAG_COLUMNS = ("keep_pos", "synonym_senses_one", "default")
FLAG_HEADER = ("# Generated by bench/review_rates.py --ocnli ... from the labelled samples (*_review.tsv) and the "
               "methods as they are: per labelled edit of a constrained method, 1 where the setting still makes "
               "it (keep_pos: --keep-pos alone; synonym_senses_one: --synonym-senses one alone; default: the "
               "defaults now), and score: the --min-similarity gate's measure of the edit alone in its sentence "
               "(4 decimals). Do not edit: re-run the script.")
#: The --min-similarity values the sweep shows (each language's measure: :data:`MINIMUM`).
THRESHOLDS = (0.94, 0.95, 0.96, 0.97, 0.98, 0.99)
#: A setting brings a method under the line when fewer than one kept edit in ten is not the same, over at least
#: this many kept edits (a share of 0/2 says nothing).
MIN_KEPT = 10
#: The package module the run-time notices read (generated, never edited by hand).
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "robusteval" / "perturbations" / "measured_rates.py"


def write_flags(rows: list[dict[str, str]]) -> None:
    columns = ["file", "key", *FLAG_COLUMNS, "score"]
    lines = [FLAG_HEADER, "\t".join(columns), *("\t".join(row[c] for c in columns) for row in rows)]
    FLAGS.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class Tables:
    """What the labelled files and the generated flags give: the markdown rows of every setting, the
    --min-similarity sweep, the lowest share per method, and the counts the package's notices quote."""

    rows: list[str] = field(default_factory=list)
    sweep: list[str] = field(default_factory=list)
    measured: dict[tuple[str, str], dict[str, tuple[int, int, int]]] = field(default_factory=dict)
    lowest: dict[str, str] = field(default_factory=dict)


def counts(labels: list[str]) -> tuple[int, int, int]:
    return labels.count("same"), labels.count("changed"), labels.count("ungrammatical")


def not_same(labels: list[str]) -> str:
    """The share of ``labels`` not judged the same (changed or ungrammatical), n and Wilson interval."""
    from robusteval.metrics.stats import proportion

    return percent(proportion(len(labels) - labels.count("same"), len(labels))) if labels else "-"


def table_row(method: str, setting: str, labels: list[str], labelled: int) -> str:
    """One markdown row: the shares of ``labels`` (the edits a setting keeps of ``labelled``) and the share not
    judged the same."""
    from robusteval.metrics.stats import proportion

    if not labels:
        return f"| {method} | {setting} | 0/{labelled} | - | - | - | - |"
    cells = [percent(proportion(labels.count(name), len(labels))) for name in LABELS]
    return f"| {method} | {setting} | {len(labels)}/{labelled} | " + " | ".join(cells) + f" | {not_same(labels)} |"


def tables(data: Path = DATA) -> Tables:
    """Every table from ``data``'s labelled files and its :data:`FLAGS` file (no model, no dataset: fast)."""
    flag_file = data / FLAGS.name
    flags = {(row["file"], row["key"]): row for row in read_rows(flag_file)} if flag_file.is_file() else {}
    out = Tables()
    for name, sample in SAMPLES.items():
        if not (data / name).is_file():
            continue
        rows = read_rows(data / name)
        labels = [row["label"] for row in rows]
        title = f"{sample.method} ({sample.language})"
        if not sample.constrained:
            out.rows.append(table_row(title, "default (all labelled edits)", labels, len(labels)))
            out.measured[(sample.method, sample.language)] = {"default": counts(labels)}
            continue
        if any((name, row["key"]) not in flags for row in rows):
            raise SystemExit(f"{name}: labelled edits without a row in {flag_file}: run bench/review_rates.py "
                             "--ocnli ... to re-make it")
        add_constrained(out, sample, labels, [flags[(name, row["key"])] for row in rows])
    return out


def add_constrained(out: Tables, sample: Sample, labels: list[str], marks: list[dict[str, str]]) -> None:
    """A constrained method's rows: every setting's share, its --min-similarity sweep, its counts."""
    title = f"{sample.method} ({sample.language})"

    def kept(test: Any) -> list[str]:
        return [label for label, mark in zip(labels, marks, strict=True) if test(mark)]

    default = kept(lambda mark: mark["default"] == "1")
    out.measured[(sample.method, sample.language)] = {"default": counts(default), "unconstrained": counts(labels)}
    if sample.method == "C-radical":
        out.rows += [table_row(title, "before (every split; all labelled edits)", labels, len(labels)),
                     table_row(title, "default now (--radical-strokes drop)", default, len(labels))]
        return
    synonym = sample.method == "W-synonym"
    minimum = MINIMUM[sample.language]
    settings = [
        ("before (no constraint; all labelled edits)", labels),
        ("--keep-pos", kept(lambda mark: mark["keep_pos"] == "1")),
        *([("--synonym-senses one", kept(lambda mark: mark["synonym_senses_one"] == "1"))] if synonym else []),
        ("default now (--keep-pos" + (" --synonym-senses one)" if synonym else ")"), default),
        (f"--min-similarity {minimum} ({measure_label(sample.language)})",
         kept(lambda mark: float(mark["score"]) >= minimum)),
        (f"default now and --min-similarity {minimum}",
         kept(lambda mark: mark["default"] == "1" and float(mark["score"]) >= minimum)),
    ]
    out.rows += [table_row(title, setting, shown, len(labels)) for setting, shown in settings]
    out.sweep += sweep_rows(title, labels, marks, out.lowest)


def sweep_rows(title: str, labels: list[str], marks: list[dict[str, str]], lowest: dict[str, str]) -> list[str]:
    """The --min-similarity sweep of one method (with the defaults, and alone), and in ``lowest`` the lowest
    not-same share any row gives over at least :data:`MIN_KEPT` kept edits, and whether it is under the line."""
    rows = []
    best: tuple[float, str] | None = None
    for x in (None, *THRESHOLDS):
        alone = [label for label, mark in zip(labels, marks, strict=True)
                 if x is None or float(mark["score"]) >= x]
        both = [label for label, mark in zip(labels, marks, strict=True)
                if mark["default"] == "1" and (x is None or float(mark["score"]) >= x)]
        rows.append(f"| {title} | {'-' if x is None else x} | {len(both)}/{len(labels)} | {not_same(both)} | "
                    f"{len(alone)}/{len(labels)} | {not_same(alone)} |")
        for shown, where in ((both, "with the defaults"), (alone, "no other constraint")):
            share = (len(shown) - shown.count("same")) / len(shown) if len(shown) >= MIN_KEPT else None
            if share is not None and (best is None or share < best[0]):
                best = (share, f"{not_same(shown)} ({'no gate' if x is None else f'X = {x}'}, {where})")
    under = best is not None and best[0] < 0.1
    lowest[title] = ("under the line: " if under else "no setting under the line; lowest: ") + (best[1] if best else "-")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ocnli", help="OCNLI dev.json: re-create every sample, check its keys and offsets, and "
                        f"re-make {FLAGS.name} and the package's measured_rates.py (without it: the tables from the "
                        "files as they are)")
    parser.add_argument("--draft", metavar="FILE", choices=sorted(SAMPLES),
                        help="print the sample to label for this file of SAMPLES instead of the rates (needs --ocnli)")
    args = parser.parse_args()
    if args.draft:
        if not args.ocnli:
            parser.error("--draft needs --ocnli")
        draft(args.draft, args.ocnli)
        return
    if args.ocnli:
        labelled = [name for name in SAMPLES if (DATA / name).is_file()]
        write_flags([row for name in labelled if SAMPLES[name].constrained
                     for row in constraint_flags(name, args.ocnli)])
        for name in labelled:
            if not SAMPLES[name].constrained:
                labelled_items(name, args.ocnli)  # every key and offset is still re-created
    out = tables()
    if args.ocnli:
        PACKAGE.write_text(package_source(out.measured), encoding="utf-8")
        print(f"wrote {FLAGS} and {PACKAGE}", file=sys.stderr)
    print("| method | setting | edits kept | same meaning | changed | ungrammatical | not same (changed or lost) |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(out.rows))
    print("\n| method | --min-similarity X | with the defaults: edits kept | not same | alone: edits kept | not same |")
    print("|---|---|---|---|---|---|")
    print("\n".join(out.sweep))
    print()
    print("\n".join(f"* {title}: {line}" for title, line in out.lowest.items()))


def package_source(measured: dict[tuple[str, str], dict[str, tuple[int, int, int]]]) -> str:
    """``robusteval/perturbations/measured_rates.py``: the labelled counts the run-time notices quote."""
    lines = ['"""Generated by bench/review_rates.py from the hand-labelled samples in bench/data (do not edit: re-run',
             "the script; tests/perturbations/test_measured_rates.py keeps the two equal).",
             "",
             "Per (method, language): the labels (same meaning, changed, ungrammatical) of the labelled edits the",
             'defaults still make ("default") and, where a default constraint applies to the method, of every labelled',
             'edit, made with none ("unconstrained"). docs/perturbations.md shows the same counts as rates."""',
             "",
             "from __future__ import annotations",
             "",
             "MEASURED: dict[tuple[str, str], dict[str, tuple[int, int, int]]] = {"]
    for (method, language), by_setting in measured.items():
        inner = ", ".join(f'"{setting}": {value}' for setting, value in by_setting.items())
        lines.append(f'    ("{method}", "{language}"): {{{inner}}},')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _made(sample: Sample, rows: list[tuple[Label, Edit]], **options: Any) -> list[bool]:
    """Whether the method, built with ``options``, still offers each labelled edit's replacement for its word
    (a refused edit drops out: the setting would have made another edit there, or none)."""
    from robusteval.perturbations.registry import MethodOptions, build_perturbation

    settings = {name: _resolve(value) for name, value in sample.settings.items() if name in ("embedding_model",)}
    method = build_perturbation(sample.method, sample.language, MethodOptions(**settings, **options))
    rng = random.Random(0)
    return [edit.replacement in method.candidates(label.original, Span(edit.start, edit.end, edit.original), rng)
            for label, edit in rows]



if __name__ == "__main__":
    main()
