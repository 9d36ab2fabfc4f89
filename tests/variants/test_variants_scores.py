"""Strict/loose scores against hand-computed values; grouping; seeded bootstrap."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from variants_testlib import run_cli

from helpers.shared import needs_modules
from robusteval.metrics.stats import wilson_interval
from robusteval.metrics.variants import _bootstrap, group_problems, problem_id, variant_scores
from robusteval.variants.grading import grade

INSTANCES = [
    {"id": "p1_0", "question": "q", "answer": 18.0},
    {"id": "p1_1", "question": "q", "answer": 27.0},
    {"id": "p1_2", "question": "q", "answer": 21.0},
    {"id": "p2_0", "question": "q", "answer": 3.0},
    {"id": "p2_1", "question": "q", "answer": 5.0},
    {"id": "2024-I-8_0", "question": "q", "answer": 5167.0},
    {"id": "2024-I-8_1", "question": "q", "answer": 1531.0},
    {"id": "41", "question": "q", "answer": 3.0},  # an untemplated problem keeps its bare id
]
PREDICTIONS = [
    {"id": "p1_0", "prediction": "Together they close 30 mph, so \\boxed{18}."},  # right
    {"id": "p1_1", "prediction": "So the answer is 27."},  # right ("the answer is")
    {"id": "p1_2", "prediction": "I think it is 20"},  # wrong (last number)
    {"id": "p2_0", "prediction": "\\boxed{3}"},  # right
    {"id": "p2_1", "prediction": "\\boxed{\\frac{10}{2}}"},  # right (equal value)
    {"id": "2024-I-8_0", "prediction": "m+n = \\boxed{5167}"},  # right; 2024-I-8_1 has no prediction: wrong
    {"id": "41", "prediction": "\\boxed{3.0}"},  # right
    {"id": "zzz_0", "prediction": "\\boxed{1}"},  # not an instance: ignored
]
# Per problem (strict, loose): p1 (0, 2/3), p2 (1, 1), 2024-I-8 (0, 1/2), 41 (1, 1).
STRICT = (0 + 1 + 0 + 1) / 4
LOOSE = (2 / 3 + 1 + 1 / 2 + 1) / 4


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_problem_ids() -> None:
    assert problem_id("12_3") == "12"
    assert problem_id("2024-II-4_0") == "2024-II-4"
    assert problem_id("41") == "41"
    assert problem_id("2024-I-11") == "2024-I-11"
    assert problem_id("fraction-sum_12") == "fraction-sum"
    assert problem_id("a_b_7") == "a_b"


def test_score_hand_made_predictions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    inst = _jsonl(tmp_path / "inst.jsonl", INSTANCES)
    preds = _jsonl(tmp_path / "preds.jsonl", PREDICTIONS)
    out = tmp_path / "scores.json"
    code = run_cli(
        ["variants", "score", "--instances", str(inst), "--predictions", str(preds), "--out", str(out)],
        monkeypatch,
    )
    assert code == 0
    captured = capsys.readouterr()
    assert "zzz_0" in captured.err and "1 instance(s) have no prediction" in captured.err
    assert "0.500" in captured.out and "0.792" in captured.out
    summary = json.loads(out.read_text())
    assert summary["strict"] == pytest.approx(STRICT)
    assert summary["loose"] == pytest.approx(LOOSE)
    assert summary["n_problems"] == 4 and summary["n_instances"] == 8 and summary["n_samples"] == 1
    assert summary["n_missing"] == 1
    per_problem = {p["problem"]: (p["strict"], p["loose"]) for p in summary["problems"]}
    assert per_problem == {
        "p1": (0.0, pytest.approx(2 / 3)),
        "p2": (1.0, 1.0),
        "2024-I-8": (0.0, 0.5),
        "41": (1.0, 1.0),
    }
    graded = {g["id"]: g["correct"] for g in summary["graded"]}
    assert graded == {
        "p1_0": True,
        "p1_1": True,
        "p1_2": False,
        "p2_0": True,
        "p2_1": True,
        "2024-I-8_0": True,
        "41": True,
    }


def test_several_samples_and_seeded_bootstrap() -> None:
    correct = {"a_0": [True, False], "a_1": [True, True], "b_0": [False, False], "c_0": [True, True]}
    s = variant_scores(correct, bootstrap_rounds=500, seed=7)
    # a: accuracies 0.5 and 1 -> strict 0.5 (chance both right), loose 0.75; b: 0, 0; c: 1, 1.
    assert s["strict"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert s["loose"] == pytest.approx((0.75 + 0 + 1) / 3)
    assert s["n_samples"] == 2 and s["n_problems"] == 3 and s["n_instances"] == 4
    again = variant_scores(correct, bootstrap_rounds=500, seed=7)
    assert s["strict_ci95"] == again["strict_ci95"] and s["loose_ci95"] == again["loose_ci95"]
    for name in ("strict", "loose"):
        lo, hi = s[f"{name}_ci95"]
        assert 0.0 <= lo <= s[name] <= hi <= 1.0
        assert hi > lo


def test_strict_multiplies_instance_accuracies() -> None:
    # p: two instances each right in 1 of 2 samples -> accuracies 0.5, 0.5; strict = 0.5 * 0.5 = 0.25 (the chance
    # that one answer per instance is all right), not min = 0.5; loose = 0.5.
    # q: three instances right in 2/4, 3/4, 4/4 samples -> strict = 0.5 * 0.75 * 1 = 0.375; loose = 0.75.
    correct = {
        "p_0": [True, False], "p_1": [False, True],
        "q_0": [True, True, False, False], "q_1": [True, False, True, True], "q_2": [True] * 4,
    }  # fmt: skip
    s = variant_scores(correct, ci=False)
    per_problem = {p["problem"]: (p["strict"], p["loose"]) for p in s["problems"]}
    assert per_problem == {"p": (pytest.approx(0.25), pytest.approx(0.5)), "q": (pytest.approx(0.375),
                                                                                pytest.approx(0.75))}
    assert s["strict"] == pytest.approx((0.25 + 0.375) / 2)
    assert s["loose"] == pytest.approx((0.5 + 0.75) / 2)


def test_bootstrap_masks_the_empty_instance_slots_of_smaller_problems() -> None:
    # Problems of 3, 1 and 2 instances (one sample each) share padded arrays. Whatever is drawn:
    # all right -> every resample has strict = loose = 1, so both intervals are exactly [1, 1];
    # each problem has one wrong instance -> strict is 0 in every resample: [0, 0]. A missing slot that counted
    # as wrong (or as right) would move these intervals.
    # (The raw bootstrap is checked here; the reported interval of such a zero-width case is Wilson's, below.)
    def bootstrap(correct: dict[str, list[bool]]) -> tuple[list[float], list[float]]:
        return _bootstrap(group_problems(list(correct)), correct, 300, 0, 0.95)

    all_right = {"a_0": [True], "a_1": [True], "a_2": [True], "b_0": [True], "c_0": [True], "c_1": [True]}
    strict, loose = bootstrap(all_right)
    assert strict == [1.0, 1.0] and loose == [1.0, 1.0]
    one_wrong = {"a_0": [True], "a_1": [False], "a_2": [True], "b_0": [False], "c_0": [True], "c_1": [False]}
    s = variant_scores(one_wrong, bootstrap_rounds=300, seed=0)
    strict, loose = bootstrap(one_wrong)
    assert s["strict"] == 0.0 and strict == [0.0, 0.0]
    # Loose per problem: a 2/3, b 0, c 1/2 -> every resample's mean lies between 0 and 2/3.
    lo, hi = s["loose_ci95"]
    assert 0.0 <= lo < hi <= 2 / 3 + 1e-12
    assert s["loose_ci95"] == loose  # a bootstrap with spread is reported as it is


def test_a_score_whose_resamples_all_agree_reports_the_wilson_interval_not_zero_width() -> None:
    # 0 of 3 problems right: the bootstrap says [0, 0]; the Wilson score interval over 3 problems is [0, 0.562].
    none_right = {"a_0": [False], "a_1": [False], "b_0": [False], "c_0": [False], "c_1": [True]}
    s = variant_scores(none_right, bootstrap_rounds=300, seed=0)
    assert s["strict"] == 0.0 and s["strict_ci95"] == pytest.approx(list(wilson_interval(0, 3)))
    assert s["strict_ci95"][1] == pytest.approx(0.5615, abs=1e-4)
    assert s["bootstrap"]["wilson"] == ["strict"]  # loose (c: 1/2) has spread: still the bootstrap's
    all_right = {"a_0": [True], "b_0": [True]}
    s = variant_scores(all_right, bootstrap_rounds=300, seed=0)
    assert s["strict_ci95"] == s["loose_ci95"] == pytest.approx(list(wilson_interval(2, 2)))
    assert s["strict_ci95"][0] < 1.0


def test_bootstrap_interval_on_a_larger_benchmark() -> None:
    rng = np.random.default_rng(0)
    skill = rng.random(40)  # per-problem chance of a right answer
    correct = {f"p{p}_{i}": list(rng.random(4) < skill[p]) for p in range(40) for i in range(3)}
    s = variant_scores(correct, bootstrap_rounds=1000, seed=1)
    assert s["n_problems"] == 40 and s["n_instances"] == 120 and s["n_samples"] == 4
    for name in ("strict", "loose"):
        lo, hi = s[f"{name}_ci95"]
        assert lo < s[name] < hi and 0.05 < hi - lo < 0.5
    assert s["strict"] < s["loose"]
    other = variant_scores(correct, bootstrap_rounds=1000, seed=2)  # another seed: about the same interval
    assert all(abs(a - b) < 0.05 for a, b in zip(other["loose_ci95"], s["loose_ci95"], strict=True))
    assert variant_scores(correct, bootstrap_rounds=1000, seed=1)["strict_ci95"] == s["strict_ci95"]


def test_grading_rules() -> None:
    assert grade("\\boxed{18}", "18") == ("18", True)
    assert grade("the answer is 0.50", "0.5")[1]
    assert grade("\\boxed{18.00005}", "18")[1]  # within rel_tol 1e-4
    assert not grade("\\boxed{18.01}", "18")[1]
    assert grade("\\boxed{\\dfrac{1}{2}}", "0.5")[1]
    assert not grade("no number here", "3")[1]
    assert not grade("\\boxed{50}", "0.5")[1]
    assert grade("\\boxed{50}", "0.5", accept_percent=True)[1]


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("\\boxed{2\\sqrt{2}}", "200"),  # an expression is no percentage of anything
        ("\\boxed{(5, 7)}", "500"),
        ("\\boxed{(5, 7)}", "0.05"),
        ("\\boxed{2\\pi}", "200"),
        ("\\boxed{3x}", "300"),
        ("\\boxed{\\{2, 4\\}}", "200"),
        ("\\boxed{[2, 5]}", "200"),
        ("\\boxed{x = 2}", "200"),
    ],
)
def test_accept_percent_scales_plain_numbers_only(prediction: str, gold: str) -> None:
    assert not grade(prediction, gold, accept_percent=True)[1]


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [("\\boxed{2}", "200"), ("\\boxed{50}", "0.5"), ("\\boxed{\\frac{1}{2}}", "50"), ("\\boxed{\\$2}", "200"),
     ("\\boxed{12\\%}", "0.12"), ("\\boxed{5 \\text{ cm}}", "500"), ("The answer is five.", "500")],
)
def test_accept_percent_still_scales_plain_numbers(prediction: str, gold: str) -> None:
    assert grade(prediction, gold, accept_percent=True)[1]


@needs_modules("math_verify", "latex2sympy2_extended", "antlr4")
def test_score_with_math_verify_records_the_grader_of_every_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inst = _jsonl(tmp_path / "inst.jsonl", [{"id": "a_0", "question": "q", "answer": 5.0},
                                            {"id": "a_1", "question": "q", "answer": 120.0},
                                            {"id": "b_0", "question": "q", "answer": 0.5}])
    preds = _jsonl(tmp_path / "preds.jsonl", [{"id": "a_0", "prediction": "So \\boxed{five}."},
                                              {"id": "a_1", "prediction": "\\boxed{5!}"},
                                              {"id": "b_0", "prediction": "\\boxed{50}"}])
    graded = {}
    for grader in ("builtin", "math-verify"):
        out = tmp_path / f"{grader}.json"
        argv = ["variants", "score", "--instances", str(inst), "--predictions", str(preds), "--out", str(out),
                "--accept-percent", "--math-grader", grader]
        assert run_cli(argv, monkeypatch) == 0
        summary = json.loads(out.read_text())
        assert summary["grading"]["math_grader"] == grader
        graded[grader] = {g["id"]: (g["correct"], g["grader"], g.get("grader_note")) for g in summary["graded"]}
    assert graded["builtin"] == {"a_0": (True, "builtin", None), "a_1": (True, "builtin", None),
                                 "b_0": (True, "builtin", "accept-percent")}
    # math-verify reads "five" as a product of symbols; the x100 reading is ours, whoever grades.
    assert graded["math-verify"] == {"a_0": (False, "math-verify", None), "a_1": (True, "math-verify", None),
                                     "b_0": (True, "math-verify", "accept-percent")}


def test_unknown_math_grader_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    inst = _jsonl(tmp_path / "inst.jsonl", INSTANCES)
    preds = _jsonl(tmp_path / "preds.jsonl", PREDICTIONS)
    with pytest.raises(SystemExit) as exc:  # argparse refuses a value outside --math-grader's choices
        run_cli(["variants", "score", "--instances", str(inst), "--predictions", str(preds),
                 "--math-grader", "sympy"], monkeypatch)
    assert exc.value.code == 2 and "invalid choice: 'sympy'" in capsys.readouterr().err
