"""The measured preservation rates come from one place (issue 37): bench/review_rates.py computes them from the
hand-labelled samples and the generated constraint flags in bench/data; the package's measured_rates.py and
docs/perturbations.md's tables are its output (kept equal here); a run of a method above one meaning-changing
edit in ten warns once, quoting the rate with n and interval, and records it beside the set's preservation; a
method with no labelled sample says "not measured"."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from helpers.datafiles import write_ocnli
from helpers.runs import cli_inproc, summary
from helpers.shared import needs_modules
from robusteval.metrics.stats import proportion
from robusteval.models.tiny import tiny_nli_pairs
from robusteval.perturbations.measured import (
    LINE,
    NOT_MEASURED,
    measured_preservation,
    notice_line,
    notice_lines,
)
from robusteval.perturbations.measured_rates import MEASURED
from robusteval.perturbations.registry import available_methods
from robusteval.perturbations.spec import PerturbationSpec

ROOT = Path(__file__).resolve().parents[2]
YESNO = ROOT / "src" / "robusteval" / "data" / "samples" / "yesno.jsonl"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """bench/review_rates.py, imported from its file (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("review_rates", ROOT / "bench" / "review_rates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["review_rates"] = module
    spec.loader.exec_module(module)
    return module


def test_docs_tables_are_the_scripts_output(bench: ModuleType) -> None:
    """Every row of the setting table and of the --min-similarity sweep, and every method's lowest share, is
    in docs/perturbations.md as bench/review_rates.py computes it from bench/data (a table edited by hand, a
    relabelled edit or a re-made flags file without re-pasting fails)."""
    docs = (ROOT / "docs" / "perturbations.md").read_text(encoding="utf-8").splitlines()
    out = bench.tables()
    assert len(out.sweep) == 5 * (1 + len(bench.THRESHOLDS))  # five constrained word methods
    for line in [*out.rows, *out.sweep, *(f"* {title}: {text}" for title, text in out.lowest.items())]:
        assert line in docs, f"not in docs/perturbations.md: {line}"


def test_package_counts_are_the_labelled_files(bench: ModuleType) -> None:
    """measured_rates.py is what the script computes, and every registered method is measured or says why not."""
    assert bench.tables().measured == MEASURED
    registered = {(info.name, info.language) for info in available_methods()}
    assert registered == set(MEASURED) | set(NOT_MEASURED) and not set(MEASURED) & set(NOT_MEASURED)


def test_no_setting_measured_reaches_the_line(bench: ModuleType) -> None:
    """The sweep's claim: no --min-similarity value, with or without the defaults, brings a word method under
    one edit in ten on at least MIN_KEPT kept edits; the share it states is the lowest the flags give."""
    flags = bench.read_rows(bench.FLAGS)
    for name, sample in bench.SAMPLES.items():
        if not sample.constrained or sample.method == "C-radical":
            continue
        labels = {row["key"]: row["label"] for row in bench.read_rows(bench.DATA / name)}
        marks = [row for row in flags if row["file"] == name]
        lowest = 1.0
        for x in [0.0, *(float(row["score"]) for row in marks)]:
            for with_defaults in (False, True):
                kept = [labels[row["key"]] for row in marks
                        if float(row["score"]) >= x and (not with_defaults or row["default"] == "1")]
                if len(kept) >= bench.MIN_KEPT:
                    lowest = min(lowest, 1 - kept.count("same") / len(kept))
        assert lowest > LINE, f"{name}: some --min-similarity reaches the line ({lowest:.2f}): make it the default"


def test_flags_are_the_methods_as_they_are(bench: ModuleType) -> None:
    """The generated flags of English W-synonym (bundled data, no dataset, no model) are what the method, built
    with each setting, still offers: a change to the method or its data without re-running the script fails."""
    pytest.importorskip("wn")
    name = "en_synonym_review.tsv"
    stored = [{k: v for k, v in row.items() if k != "score"} for row in bench.read_rows(bench.FLAGS) if row["file"] == name]
    made = [{k: v for k, v in row.items() if k != "score"} for row in bench.constraint_flags(name, "", scores=False)]
    assert made == stored and len(made) == 50


def test_block_quotes_the_rate_of_the_runs_settings() -> None:
    lost = proportion(14, 32)
    block = measured_preservation("W-synonym", "en", PerturbationSpec())
    assert block["not_same"] == lost and block["n_labelled"] == 50 and block["above_line"] and block["differs"] is None
    line = notice_line(block)
    assert line is not None and line.startswith("warning: W-synonym (en): 14/32 = 44% [28, 61] of the reviewed edits")
    assert "docs/perturbations.md" in line and "robusteval perturb review" in line
    # The constraints off: every labelled edit was made that way.
    off = measured_preservation("W-synonym", "en", PerturbationSpec(keep_pos=False, synonym_senses="all"))
    assert off["not_same"] == proportion(30, 50) and "no constraint" in off["setting"]
    # Mixed, or gated: the defaults' rate, saying how this run differs.
    mixed = measured_preservation("W-synonym", "en", PerturbationSpec(synonym_senses="all"))
    assert mixed["not_same"] == lost and "--synonym-senses all" in mixed["differs"]
    gated = measured_preservation("W-homophone", "zh", PerturbationSpec(min_similarity=0.96))
    assert gated["not_same"] == proportion(13, 22) and "without --min-similarity" in gated["differs"]
    # Under the line: recorded, not announced.
    swap = measured_preservation("C-swap", "en")
    assert swap["not_same"] == proportion(1, 50) and not swap["above_line"] and notice_line(swap) is None
    # C-shuffle sits at the line (5/50), not above it.
    assert notice_line(measured_preservation("C-shuffle", "en")) is None


@pytest.mark.parametrize("method,language", sorted(NOT_MEASURED))
def test_unmeasured_methods_say_so(method: str, language: str) -> None:
    block = measured_preservation(method, language)
    line = notice_line(block)
    assert not block["measured"] and line is not None
    assert line.startswith(f"note: {method} ({language}): meaning preservation not measured (")


def test_every_measured_method_above_the_line_warns_with_its_own_rate() -> None:
    for (method, language), rows in MEASURED.items():
        same, changed, ungrammatical = rows["default"]
        n = same + changed + ungrammatical
        line = notice_line(measured_preservation(method, language))
        assert (line is not None) == ((changed + ungrammatical) / n > LINE), (method, language)
        if line:
            assert f"{changed + ungrammatical}/{n} = " in line
    assert len(notice_lines([measured_preservation("W-synonym", "zh")] * 3)) == 1


def test_perturb_warns_once_and_records_it(tmp_path: Path) -> None:
    pytest.importorskip("wn")
    base = ["perturb", "--dataset", "jsonl", "--data-file", str(YESNO), "--answer-type", "label", "--limit", "6",
            "--language", "en", "--seed", "1"]
    done = cli_inproc(*base, "--method", "W-synonym", "--out", str(tmp_path / "syn.jsonl"))
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning: W-synonym (en)")]
    assert len(warnings) == 1 and "14/32 = 44% [28, 61]" in warnings[0]
    done = cli_inproc(*base, "--method", "W-synonym", "--no-keep-pos", "--synonym-senses", "all",
                      "--out", str(tmp_path / "old.jsonl"))
    assert "30/50 = 60% [46, 72]" in done.stdout
    done = cli_inproc(*base, "--method", "C-swap", "--out", str(tmp_path / "swap.jsonl"))
    assert done.returncode == 0 and "warning:" not in done.stdout and "note:" not in done.stdout


@needs_modules("jieba", "pypinyin")
def test_robustness_warns_once_and_records_it_beside_the_sets(tiny_nli_dir: Path, tmp_path: Path) -> None:
    """Generated sets and a perturbed file (its method read from its lines): one line per method above the line,
    each set's rate in summary.json, run.log and the report's accuracy cell."""
    data = write_ocnli(tmp_path / "dev.json", tiny_nli_pairs(8, seed=11))
    synonyms = tmp_path / "syn.jsonl"
    assert cli_inproc("perturb", "--dataset", "ocnli", "--data-file", str(data), "--method", "W-synonym",
                      "--out", str(synonyms)).returncode == 0
    out = tmp_path / "rb"
    done = cli_inproc("robustness", "--model", f"hf:{tiny_nli_dir}", "--template", str(tiny_nli_dir / "template.json"),
                      "--dataset", "ocnli", "--data-file", str(data), "--sets", f"W-homophone,C-pinyin,syn={synonyms}",
                      "--bootstrap", "50", "--out", str(out))
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and warnings[0].startswith("warning: W-homophone (zh): 13/22 = 59% [39, 77]")
    assert warnings[1].startswith("warning: W-synonym (zh): 5/13 = 38% [18, 64]") and "read from a file" in warnings[1]
    sets = summary(out)["sets"]
    assert sets["W-homophone"]["measured_preservation"]["not_same"] == json.loads(json.dumps(proportion(13, 22)))
    assert sets["C-pinyin"]["measured_preservation"]["above_line"] is False
    assert sets["syn"]["measured_preservation"]["method"] == "W-synonym"
    log = (out / "run.log").read_text(encoding="utf-8")
    assert all(log.count(line) == 1 for line in warnings)
    from robusteval.evals.robustness.results.section import accuracy
    from robusteval.runs import load_run

    run = load_run(out)
    assert "method's labelled sample: not same 13/22 = 59% [39, 77]" in accuracy(run, "W-homophone").caveat
    assert "labelled sample" not in accuracy(run, "C-pinyin").caveat
