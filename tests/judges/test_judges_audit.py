"""``robusteval judges audit``: the shipped labelled set, the figures for every offline judge (through the
CLI's ``main``), a model judge audited as a resumable run, and one-line errors for bad labelled files."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import robusteval
from helpers.datafiles import write_jsonl
from helpers.runs import cli_inproc
from robusteval.errors import UserError
from robusteval.judges import JUDGE_STAGE
from robusteval.judges.audit import AuditConfig, audit_judge, load_labelled
from robusteval.judges.errortypes import ERROR_TYPES
from robusteval.judging import JudgeOptions
from robusteval.metrics.stats import wilson_interval
from robusteval.models.base import Capabilities
from robusteval.store import SUMMARY_NAME, RunStore

LABELLED = Path(__file__).resolve().parents[1] / "data" / "judge_audit.jsonl"
GOOD = {"id": "a", "question": "Tom has 3 apples and buys 5. How many?", "answer": "8",
        "reference_cot": "3 + 5 = 8.", "perturbed_cot": "5 + 3 = 8.", "label": "correct", "category": "reordered steps"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_inproc("judges", "audit", *args)


def test_the_labelled_set_is_large_balanced_and_varied() -> None:
    items = load_labelled(LABELLED)
    assert len(items) >= 80 and len({i.id for i in items}) == len(items)
    wrong = Counter(i.category for i in items if i.incorrect)
    assert set(wrong) == set(ERROR_TYPES) and max(wrong.values()) - min(wrong.values()) <= 1
    kinds = Counter(i.category for i in items if not i.incorrect)
    assert {"paraphrase", "unit change", "notation", "reordered steps", "self-correction"} <= set(kinds)
    assert all(i.answer for i in items)
    assert items[0].reasoning_item().candidate.startswith(f"The answer is {items[0].answer}. ")


def test_audit_cli_prints_per_category_figures_and_writes_the_agreement(tmp_path: Path) -> None:
    figures: dict[str, Any] = {}
    for spec in ("arith", "grounding", "arith+grounding"):
        out = tmp_path / spec
        result = cli("--judge", spec, "--labelled", str(LABELLED), "--out", str(out))
        assert result.returncode == 0, result.stderr[-2000:]
        for category in ERROR_TYPES:
            assert category in result.stdout
        summary = json.loads((out / SUMMARY_NAME).read_text(encoding="utf-8"))
        # The accuracy printed with its Wilson interval over all items.
        tp, tn = summary["agreement"]["confusion"]["tp"], summary["agreement"]["confusion"]["tn"]
        low, high = wilson_interval(tp + tn, summary["agreement"]["n"])  # type: ignore[misc]
        assert f"{summary['agreement']['accuracy']:.3f} [{low:.3f}, {high:.3f}]" in result.stdout
        assert summary == {**summary, **audit_judge(AuditConfig(str(LABELLED), judging=JudgeOptions(judge=spec))), "environment":
                           summary["environment"], "model_identity": None, "seeds": {},
                           "peak_memory": summary["peak_memory"]}
        agreement = summary["agreement"]
        confusion = agreement["confusion"]
        # Abstentions (arith with no equation to check) are counted apart, never as agreement or disagreement.
        assert summary["n"] == len(load_labelled(LABELLED)) == summary["n_judged"] + summary["n_abstained"]
        assert sum(confusion.values()) == agreement["n"] == summary["n_judged"]
        assert summary["n_unparsed"] == summary["n_abstained"] == len(summary["abstentions"])
        assert sum(summary["abstain_reasons"].values()) == summary["n_abstained"]
        assert agreement["accuracy"] == pytest.approx((confusion["tp"] + confusion["tn"]) / agreement["n"])
        assert len(summary["disagreements"]) == confusion["fp"] + confusion["fn"]
        assert not {d["id"] for d in summary["disagreements"]} & {a["id"] for a in summary["abstentions"]}
        assert sum(row["n"] + row["n_abstained"] for row in summary["per_category"].values()) == summary["n_incorrect"]
        figures[spec] = summary
    recall = {spec: {c: s["per_category"][c]["recall"] for c in ERROR_TYPES} for spec, s in figures.items()}
    # arith sees false equations only; grounding sees quantities; together they see both.
    assert recall["arith"]["wrong calculation"] == 1.0 and recall["arith"]["wrong information"] == 0.0
    assert recall["grounding"]["irrelevant information"] >= 0.75 and recall["grounding"]["wrong information"] >= 0.5
    assert figures["grounding"]["false_alarms"]["reordered steps"]["flagged"] == 0
    both = figures["arith+grounding"]["agreement"]
    assert both["recall"] > max(figures[s]["agreement"]["recall"] for s in ("arith", "grounding"))
    assert figures["arith+grounding"]["error_types"]["accuracy"] >= 0.6


def test_a_model_judge_audit_is_a_resumable_run(tiny_llama_dir: Path, tmp_path: Path) -> None:
    small = write_jsonl(tmp_path / "small.jsonl", [json.loads(line) for line in
                                                   LABELLED.read_text(encoding="utf-8").splitlines()[:6]])
    config = robusteval.AuditConfig(str(small), judging=robusteval.JudgeOptions(
        judge=f"arith+hf:{tiny_llama_dir}", error_classifier=f"hf:{tiny_llama_dir}"))
    first = robusteval.audit_judge(config, out=tmp_path / "run")
    with RunStore.open_existing(tmp_path / "run") as store:
        cached = store.records(JUDGE_STAGE)
    # 6 reasoning verdicts, and the classifier on every incorrect item (and on flagged ones no checker types).
    n_incorrect = first["n_incorrect"]
    assert len(cached) >= 6 + n_incorrect and first["classifier"]["n"] == n_incorrect
    assert first["judge"] == f"arith+llm:hf:{tiny_llama_dir}"

    def refuse(spec: str) -> Any:
        from robusteval.models import load_backend

        backend = load_backend(spec)
        backend.continuation_logprobs = backend.continuation_logprobs_many = None  # a second run scores nothing
        return backend

    again = robusteval.audit_judge(config, out=tmp_path / "run", load_model=refuse)
    assert {k: v for k, v in again.items() if k != "environment"} == {
        k: v for k, v in first.items() if k != "environment"}
    with pytest.raises(UserError, match="holds a different run"):
        robusteval.audit_judge(AuditConfig(str(small), judging=JudgeOptions(judge="grounding")), out=tmp_path / "run")


def test_without_a_run_directory_the_classifier_is_asked_once_per_item(tmp_path: Path) -> None:
    """A model judge that flags everything without saying why: the flagged items no checker types go to the
    classifier, which is then scored on every incorrect item; no item reaches the model twice."""
    from robusteval.models import GENERATE, LOGPROBS

    asked: list[str] = []

    class Scoring:
        name = "scoring"
        capabilities = frozenset({GENERATE, LOGPROBS})
        declared = Capabilities(capabilities, scores_in_context=True)

        def generate(self, requests: Any) -> Any:
            raise AssertionError("not asked to generate")

        def continuation_logprobs(self, prompt: str, continuations: Any, prefix: str = "") -> list[float]:
            if len(continuations) == 4:  # the classifier; the judge scores two digits ("1" below "0": wrong)
                asked.append(prompt)
            return [-2.0, -1.0, -3.0, -4.0][: len(continuations)]

    small = write_jsonl(tmp_path / "small.jsonl", [json.loads(line) for line in
                                                   LABELLED.read_text(encoding="utf-8").splitlines()[:12]])
    summary = audit_judge(AuditConfig(str(small), judging=JudgeOptions(judge="hf:judge", error_classifier="hf:judge")),
                          load_model=lambda spec: Scoring())
    assert summary["agreement"]["confusion"]["fn"] == 0 and summary["classifier"]["n"] == summary["n_incorrect"]
    # The flagged items the checkers could not type got the classifier's answer ("wrong reasoning").
    assert summary["per_category"]["wrong reasoning"]["n_typed"] > 0
    assert asked and len(asked) == len(set(asked))


@pytest.mark.parametrize(("change", "fragment"), [
    ({"label": "wrong"}, ":1: field 'label': expected 'correct' or 'incorrect', got 'wrong'"),
    ({"perturbed_cot": None}, ":1: field 'perturbed_cot': required field is missing"),
    ({"question": "  "}, ":1: field 'question': expected a non-empty string"),
    ({"label": "incorrect", "category": "typo"}, ":1: field 'category': an incorrect item's category is one of"),
])
def test_a_bad_item_is_one_line_naming_file_line_and_field(tmp_path: Path, change: dict[str, Any],
                                                           fragment: str) -> None:
    row = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    path = write_jsonl(tmp_path / "bad.jsonl", [row, GOOD])
    result = cli("--judge", "arith", "--labelled", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("robusteval: error:")]
    assert len(errors) == 1 and str(path) + fragment in errors[0], result.stderr


def test_a_correct_item_needs_no_category_and_an_incorrect_one_does(tmp_path: Path) -> None:
    plain = {k: v for k, v in GOOD.items() if k != "category"}
    path = write_jsonl(tmp_path / "plain.jsonl", [plain])
    assert [(i.label, i.category) for i in load_labelled(path)] == [("correct", None)]
    summary = audit_judge(AuditConfig(str(path), judging=JudgeOptions(judge="arith")))
    assert summary["false_alarms"] == {"other": {"n": 1, "flagged": 0, "n_abstained": 0, "rate": 0.0}}
    missing = write_jsonl(tmp_path / "missing.jsonl", [{**plain, "label": "incorrect"}])
    with pytest.raises(UserError, match=r"missing\.jsonl:1: field 'category': required field is missing"):
        load_labelled(missing)


def test_other_bad_files_and_specs_are_refused(tmp_path: Path) -> None:
    twice = write_jsonl(tmp_path / "twice.jsonl", [GOOD, GOOD])
    with pytest.raises(UserError, match=r"twice.jsonl:2: field 'id': duplicate id 'a' \(first on line 1\)"):
        load_labelled(twice)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(GOOD) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"broken\.jsonl:2: invalid JSON"):
        load_labelled(broken)
    with pytest.raises(UserError, match=r"missing\.jsonl: file not found"):
        load_labelled(tmp_path / "missing.jsonl")
    result = cli("--judge", "nonsense", "--labelled", str(LABELLED), "--out", str(tmp_path / "never"))
    assert result.returncode == 2 and "unknown judge 'nonsense'" in result.stderr
    assert not (tmp_path / "never").exists()


def test_abstentions_are_counted_apart_from_agreement(tmp_path: Path, tiny_backend: Any) -> None:
    """A generating LLM judge that never answers readably (the tiny random model), re-asked once: every item is
    an abstention with two attempts, so nothing is agreement or disagreement; arith+it judges where arith can."""
    from robusteval.models import GENERATE

    class GenerateOnly:
        name = tiny_backend.name
        capabilities = frozenset({GENERATE})

        def generate(self, requests: Any) -> Any:
            return tiny_backend.generate(requests)

    small = write_jsonl(tmp_path / "small.jsonl", [json.loads(line) for line in
                                                   LABELLED.read_text(encoding="utf-8").splitlines()[:6]])
    prompt = tmp_path / "criteria.txt"
    prompt.write_text("Is the second solution's reasoning right?\n$reference\n---\n$candidate\nRating:", "utf-8")
    config = AuditConfig(str(small), judging=JudgeOptions(judge="hf:judge", judge_retries=1,
                                                                 judge_prompt=str(prompt)))
    summary = audit_judge(config, load_model=lambda spec: GenerateOnly())
    assert summary["n_abstained"] == summary["n_unparsed"] == summary["n"] == 6 and summary["n_judged"] == 0
    assert summary["abstain_reasons"] == {"unreadable verdict after 2 asks": 6}
    assert summary["agreement"]["n"] == 0 and summary["agreement"]["accuracy"] is None
    assert summary["disagreements"] == [] and len(summary["abstentions"]) == 6
    assert all(row["n"] == 0 for row in summary["per_category"].values())
    both = audit_judge(AuditConfig(str(small), judging=JudgeOptions(judge="arith+hf:judge", judge_retries=1)),
                       load_model=lambda s: GenerateOnly())
    arith = audit_judge(AuditConfig(str(small), judging=JudgeOptions(judge="arith")))
    assert both["n_judged"] == arith["n_judged"] and both["agreement"] == arith["agreement"]
    assert all(r.startswith("all members abstained: arith: no equation to check") for r in both["abstain_reasons"])
    # The options reach the run identity only when set: earlier audit runs keep theirs.
    from robusteval.judges.audit import audit_identity

    plain = audit_identity(AuditConfig(str(small), judging=JudgeOptions(judge="hf:judge")), "x")
    assert "judge_retries" not in plain and "judge_prompt_sha256" not in plain
    assert audit_identity(config, "x")["judge_retries"] == 1 and audit_identity(config, "x")["judge_prompt_sha256"]


def test_a_bad_judge_prompt_is_refused_before_anything_runs(tmp_path: Path) -> None:
    prompt = tmp_path / "bad.txt"
    prompt.write_text("Grade this for $5.\n$candidate\nRating:", encoding="utf-8")
    result = cli("--judge", "arith", "--labelled", str(LABELLED), "--judge-prompt", str(prompt),
                 "--out", str(tmp_path / "never"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("robusteval: error:")]
    assert len(errors) == 1 and f"{prompt}:1: '$5.' is not a placeholder" in errors[0], result.stderr
    assert "$$" in errors[0] and not (tmp_path / "never").exists()
