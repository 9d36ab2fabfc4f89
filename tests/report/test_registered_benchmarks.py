"""The answer-first eval, perturbed benchmarks (RB-index) and VAR-MATH are registered methods (issue 38 item 1):
each found in the method registry with its command, section and headlines, its study runner giving the study's
method, and its results contract reading real stored runs on the tiny models (``helpers.reportruns``) the way
``runs show``, the paired tests, ``runs compare`` and the report do."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from robusteval.data.spec import DataSpec
from robusteval.evals.answer_first import EvalConfig, evaluate
from robusteval.evals.robustness import robustness_info
from robusteval.methods import method_named, method_of_command, results_of_command
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.report.build import section_of, sections
from robusteval.report.collect import collect
from robusteval.report.compare import HEADINGS, all_boards, leaderboard_groups
from robusteval.report.latex import compare_latex
from robusteval.report.pairing import run_outcomes
from robusteval.report.rates import run_rates
from robusteval.runs import Run, load_run
from robusteval.store.stages import STAGES
from robusteval.studies.methods import get_method, method_names

#: name -> (command, section, headlines, order, data kind)
EXPECTED = {
    "eval": ("eval", "evals", (("acc", "higher"),), 10, "qa"),
    "variants": ("variants eval", "varmath", (("strict", "higher"), ("loose", "higher")), 30, "instances"),
    "robustness": ("robustness", "robustness", (("rb_index", "lower"), ("acc[original]", "higher")), 40, "label"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_method_is_registered_with_its_command_section_and_headlines(name: str) -> None:
    command, section, headlines, order, kind = EXPECTED[name]
    spec = method_named(name)
    assert spec is not None and (spec.command, spec.section, spec.headlines, spec.order) == (
        command, section, headlines, order)
    assert method_of_command(command) is spec and section_of(command) == section
    method = get_method(name)
    assert method is not None and (method.name, method.data_kind, method.headlines) == (name, kind, headlines)
    assert name in method_names()
    assert results_of_command(command).boards[0].command == command


def test_the_robustness_runner_records_its_sets_and_reads_set_files_as_paths() -> None:
    method = get_method("robustness")
    assert method is not None and method.run_info is robustness_info and method.named_paths == ("sets",)
    other = get_method("eval")
    assert other is not None and other.run_info is None and other.named_paths == ()


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory: pytest.TempPathFactory, tiny_llama_dir: Path) -> Path:
    root = tmp_path_factory.mktemp("eval-run")
    data = root / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"What is {i} + {i}?", "answer": str(2 * i)})
                            + "\n" for i in range(5)), encoding="utf-8")
    evaluate(EvalConfig(DataSpec("jsonl", str(data), answer_type="number"),
                        generation=GenerationOptions(max_new_tokens=4)),
             load_backend(f"hf:{tiny_llama_dir}"), root / "run")
    return root / "run"


def _check_round_trip(run: Run, headlines: tuple[tuple[str, str], ...], stored: dict[str, object]) -> None:
    """The results contract on a stored run: every headline's number as the summary stores it, with n and a
    (non-empty) interval, reproduced by the per-example outcomes; one leaderboard row; the run's section."""
    results = results_of_command(run.command)
    spec = method_of_command(run.command)
    assert results is not None and spec is not None
    rates = {rate.metric: rate for rate in results.rates(run)}
    assert [r.metric for r in run_rates(run)] == list(rates)
    for metric, _ in headlines:
        rate = rates[metric]
        assert rate.num.value == stored[metric] and rate.num.n
        assert rate.num.ci is not None and rate.num.ci[0] < rate.num.ci[1]
        outcomes = run_outcomes(run, metric, rate.num.value)
        assert outcomes is not None and outcomes.reproduces(), metric
    inputs = collect([run.path])
    board = next(b for b in all_boards() if b.command == run.command)
    (group,) = leaderboard_groups(board, inputs)
    assert [row["run"] for row in group.rows] == [str(run.path)]
    assert all(HEADINGS.get(column) for column in board.shown if column in board.headings)
    assert [section.id for section in sections(inputs)] == [spec.section, "compare"]


def test_an_eval_run_round_trips(eval_run: Path) -> None:
    run = load_run(eval_run)
    summary = run.summary or {}
    _check_round_trip(run, EXPECTED["eval"][2], {"acc": summary["acc"]})


def test_a_robustness_run_round_trips(all_runs: dict[str, Path]) -> None:
    run = load_run(all_runs["robustness"])
    summary = run.summary or {}
    _check_round_trip(run, EXPECTED["robustness"][2],
                      {"rb_index": summary["rb_index"], "acc[original]": summary["acc_original"]})
    # Its paper tables: the leaderboard with the label mode said, then the accuracy on each set.
    tex = compare_latex([run.path])
    assert "Label mode: hard (hard labels, read from the generation)." in tex
    assert "accuracy (\\%) on the original and on each perturbed set" in tex


def test_a_variants_run_round_trips(all_runs: dict[str, Path]) -> None:
    run = load_run(all_runs["variants"])
    summary = run.summary or {}
    _check_round_trip(run, EXPECTED["variants"][2], {"strict": summary["strict"], "loose": summary["loose"]})
    # Its diagnosis shares (the variants paired with their original run) get a paper table of their own.
    tex = compare_latex([run.path, all_runs["original"]])
    assert "problems per diagnosis category" in tex


def test_a_study_reads_relative_set_files_from_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The robustness runner's ``named_paths``: a ``NAME=FILE`` set's file is read from the study's folder, like
    its other paths, wherever the study is run from."""
    from helpers.studies import YESNO
    from robusteval.studies.plan import load_study

    folder = tmp_path / "study"
    (folder / "sets").mkdir(parents=True)
    (folder / "sets" / "mine.jsonl").write_text(Path(YESNO).read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "study.toml").write_text(
        '[[models]]\nspec = "hf:unused"\n[datasets.yn]\ndataset = "jsonl"\n'
        f'data_file = "{YESNO}"\nanswer_type = "label"\nlimit = 2\n'
        '[methods.robustness]\ndatasets = ["yn"]\nsets = ["C-swap", "mine=sets/mine.jsonl"]\n', encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (cell,) = load_study(folder / "study.toml").cells
    assert cell.config.sets == f"C-swap,mine={folder / 'sets' / 'mine.jsonl'}"


def test_the_study_leaderboard_reads_each_method_number_as_the_method_says() -> None:
    from robusteval.studies.leaderboard import direction

    assert direction("strict", "higher") == "higher is better"  # a VAR-MATH score is an accuracy
    assert direction("rb_index", "lower") == "lower is more robust"
    assert direction("same[C-swap]", "higher") == "share of the labelled edits judged same meaning, no score"


@pytest.mark.parametrize(("name", "stage"), [("eval", "answer_first"), ("robustness", "robustness_outcome"),
                                           ("variants", "variants_generation")])
def test_the_registration_names_the_module_that_registers_its_stage(name: str, stage: str) -> None:
    """``MethodSpec.stages`` is what the stage registry imports in a process that ran no pipeline (an executor
    shipping computes): each module it names must itself register the method's stage."""
    spec = method_named(name)
    assert spec is not None
    assert any(stage in vars(importlib.import_module(module)).values() for module in spec.stages)
    assert stage in {entry.name for entry in STAGES}
