"""The word-importance and robustness pipelines called as a library (no CLI) on the tiny NLI classifier: each
summary agrees with the records stored in its run, a re-run computes nothing new, and the seeds are recorded."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import robusteval as rv
from helpers.datafiles import write_ocnli
from helpers.runs import records, units
from helpers.shared import needs_modules
from robusteval.attacks.wordimportance import WordImportanceRunConfig, attack_wordimportance
from robusteval.data.loaders import load_dataset
from robusteval.errors import UserError
from robusteval.evals.classification import ClassificationTemplate, LabelClassifier, example_fields
from robusteval.evals.prompt_options import PromptOptions
from robusteval.evals.robustness import RobustnessConfig, robustness
from robusteval.metrics.robustness import rb_index
from robusteval.metrics.wordimportance import attack_summary
from robusteval.models import load_backend
from robusteval.models.tiny import tiny_nli_pairs
from robusteval.perturbations.dataset import example_from_record
from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset
from robusteval.perturbations.spec import CandidateSpec, PerturbationSpec
from robusteval.store import RunStore

pytestmark = needs_modules("pypinyin")  # C-homophone


@pytest.fixture(scope="module")
def model(tiny_nli_dir: Path):  # type: ignore[no-untyped-def]
    return load_backend(f"hf:{tiny_nli_dir}")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, tiny_nli_dir: Path) -> rv.DataSpec:
    path = write_ocnli(tmp_path_factory.mktemp("ocnli") / "dev.json", tiny_nli_pairs(8, seed=5))
    return rv.DataSpec("ocnli", str(path))


def test_attack_summary_matches_the_stored_records(model, data: rv.DataSpec, tiny_nli_dir: Path,  # type: ignore[no-untyped-def]
                                                    tmp_path: Path) -> None:
    adv = tmp_path / "adv.jsonl"
    config = WordImportanceRunConfig(data=data, perturbation=CandidateSpec(), method="C-homophone",
                                     rates="0.3,0.1", budget=40,
                                     prompt=PromptOptions(template=str(tiny_nli_dir / "template.json")),
                                     write_adv=str(adv), seed=3)
    assert config.rates == (0.1, 0.3)  # the flag's spelling, normalised
    out = tmp_path / "wi"
    summary = attack_wordimportance(config, model, out)
    stored = records(out, "wordimportance")
    assert len(stored) == summary["n"] == 8
    expected = attack_summary(stored, (0.1, 0.3))  # counts, rates and skip reasons, from the records
    assert {"n", "n_attacked", "n_skipped", "by_rate", "asr_by_rate", "skip_reasons"} <= set(expected)
    assert {k: summary[k] for k in expected} == expected
    assert summary["confidence"] == "logprob" and summary["methods"] == ["C-homophone"]
    assert summary["seeds"] == {"seed": 3} and summary["model_identity"]["backend"] == "hf"
    assert all(r["queries"] <= 40 for r in stored)
    # The adversarial set holds exactly the successes, and the summary says so.
    wins = [r["id"] for r in stored if r["status"] == "success"]
    assert wins, "C-homophone should flip some of the pairs, or the Adv-set checks check nothing"
    assert [e.id for e in load_dataset("examples", adv)] == wins
    assert summary["adversarial_set"] == {"path": str(adv), "n": len(wins)}
    assert summary == json.loads((out / "summary.json").read_text("utf-8"))
    run = rv.load_run(out)
    assert run.command == "attack wordimportance" and run.identity["rates"] == [0.1, 0.3]
    with RunStore.open_existing(out) as store:
        assert {**rv.ATTACKS.get("wordimportance").value.summarise(store), "peak_memory": summary["peak_memory"]} == summary
    # A finished run computes nothing new.
    before = units(out)
    again = attack_wordimportance(config, model, out)
    assert units(out) == before and again["by_rate"] == summary["by_rate"]
    # Another budget is another run: the directory refuses it.
    with pytest.raises(UserError, match="budget"):
        attack_wordimportance(replace(config, budget=41), model, out)


def test_run_config_checks_its_values(data: rv.DataSpec) -> None:
    with pytest.raises(UserError, match=r"^WordImportanceRunConfig.rates: every rate must be in \(0, 1\]"):
        WordImportanceRunConfig(data=data, perturbation=CandidateSpec(), method="C-homophone", rates=(0.0, 2.0))
    with pytest.raises(UserError, match=r"^WordImportanceRunConfig.budget: must be a number >= 1, got 0"):
        WordImportanceRunConfig(data=data, perturbation=CandidateSpec(), method="C-homophone", budget=0)


def test_robustness_summary_matches_the_stored_answers(model, data: rv.DataSpec, tiny_nli_dir: Path,  # type: ignore[no-untyped-def]
                                                        tmp_path: Path) -> None:
    template = str(tiny_nli_dir / "template.json")
    # A perturbed copy written by the library's perturb pipeline, used as a file set beside a generated one.
    copy = tmp_path / "traditional.jsonl"
    written = perturb_dataset(PerturbConfig(data=data, perturbation=PerturbationSpec(), method="C-traditional"),
                              copy)
    assert written["n"] == 8 and not written["already_complete"]
    assert perturb_dataset(PerturbConfig(data=data, perturbation=PerturbationSpec(), method="C-traditional"),
                           copy)["already_complete"]
    config = RobustnessConfig(data=data, perturbation=PerturbationSpec(), sets=("C-homophone", f"trad={copy}"),
                              prompt=PromptOptions(template=template), bootstrap=200, seed=1,
                              bootstrap_seed=7)
    out = tmp_path / "rb"
    summary = robustness(config, model, out)
    assert summary["sets_spec"] == f"C-homophone,trad={copy}" and set(summary["acc"]) == {"C-homophone", "trad"}
    assert summary["seeds"] == {"seed": 1, "bootstrap_seed": 7}
    # Every accuracy again from the stored perturbed texts and answers, at no new query.
    originals = data.load()
    generated = {r["id"]: r for r in records(out, "perturbed_example")}
    sets = {"C-homophone": [example_from_record(generated[ex.id]) for ex in originals],
            "trad": load_dataset("examples", copy)}
    classifier = LabelClassifier(model, ClassificationTemplate.load(template), RunStore.open_existing(out))

    def accuracy(examples: list) -> float:  # type: ignore[type-arg]
        answers = classifier.classify([example_fields(ex) for ex in examples])
        return sum(a["label"] == ex.answer for a, ex in zip(answers, examples, strict=True)) / len(examples)

    assert accuracy(originals) == pytest.approx(summary["acc_original"])
    accs = [accuracy(sets[name]) for name in ("C-homophone", "trad")]
    assert accs == pytest.approx([summary["acc"]["C-homophone"], summary["acc"]["trad"]])
    assert classifier.queries == 0
    assert summary["rb_index"] == pytest.approx(rb_index(summary["acc_original"], accs))
    # The bootstrap has its own seed: another one moves only the CIs, and asks the model nothing new.
    before = units(out)
    other = robustness(replace(config, bootstrap_seed=8), model, out)
    assert units(out) == before
    assert other["acc"] == summary["acc"] and other["rb_index"] == summary["rb_index"]
    assert other["seeds"] == {"seed": 1, "bootstrap_seed": 8}
