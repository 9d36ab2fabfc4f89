"""Leaderboards rank only comparable runs, only numbers precise enough to rank, in the right direction; every
number carries its n and interval (terminal, CSV, LaTeX, API, ``results_frame``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import robusteval as rv
from helpers.reportstores import matcha_store, robustness_store
from helpers.runs import cli_inproc
from helpers.shared import needs_modules
from robusteval.errors import UserError
from robusteval.report.compare import UNRANKED, Leaderboard
from robusteval.report.model import Num

#: A model that answers 5 questions; 4 are not attacked (no answer to read), so its UR of 100 % rests on one example.
#: (A judge decision no longer shrinks the denominator: clean reasoning judged wrong is a category of n_attacked.)
ONE_RATED = ["skip:no answer in the clean completion"] * 4 + ["unsuccessful"]


def _rows(board: Leaderboard) -> dict[str, dict[str, Num | str]]:
    return {str(row["model"]): row for row in board.rows}


@pytest.fixture(scope="module")
def matcha_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("matcha-groups")
    return {
        "one-rated": matcha_store(root / "one", 5, kinds=ONE_RATED, model_name="hf:one-rated"),
        "none-rated": matcha_store(root / "none", 5, kinds=["skip:no answer in the clean completion"] * 5,
                                   model_name="hf:none-rated"),
        "mostly-kept": matcha_store(root / "kept", 40, kinds=["unsuccessful"] * 30 + ["success"] * 6 + ["wrong"] * 4,
                                    model_name="hf:mostly-kept", seed=1),
        "half-kept": matcha_store(root / "half", 40, kinds=["unsuccessful"] * 20 + ["success"] * 12 + ["wrong"] * 8,
                                  model_name="hf:half-kept", seed=2),
        "rarely-kept": matcha_store(root / "rare", 40, kinds=["unsuccessful"] * 8 + ["success"] * 2 + ["wrong"] * 30,
                                    model_name="hf:rarely-kept", seed=3),
    }


def test_a_run_with_one_rated_example_is_not_ranked(matcha_runs: dict[str, Path]) -> None:
    [board] = rv.compare_runs(list(matcha_runs.values()))  # seeds differ: still one comparable group
    rows = _rows(board)
    ur = rows["one-rated"]["ur"]
    assert isinstance(ur, Num)
    assert (ur.value, ur.n, ur.runs, ur.percent) == (1.0, 1, (str(matcha_runs["one-rated"]),), True)
    assert board.rows[0]["model"] == "mostly-kept"
    assert rows["one-rated"]["rank"] == "-" and rows["one-rated"][UNRANKED] == "n_attacked = 1 < 10"
    assert rows["none-rated"]["rank"] == "-" and rows["none-rated"][UNRANKED] == "no value (n_attacked = 0)"
    # Enough examples allowed, its interval (20.7 to 100 %) is still too wide to rank...
    rows = _rows(rv.compare_runs(list(matcha_runs.values()), min_n=1)[0])
    assert rows["one-rated"]["rank"] == "-" and rows["one-rated"][UNRANKED] == "95% interval 79 points wide > 50"
    # ... and only with both gates open would its UR of 100 % from one example rank it first.
    board = rv.compare_runs(list(matcha_runs.values()), min_n=1, max_width=1.0)[0]
    assert board.rows[0]["model"] == "one-rated" and board.rows[0]["rank"] == "1"


def test_the_rank_order_follows_each_method_s_direction(matcha_runs: dict[str, Path], tmp_path: Path) -> None:
    # MATCHA: higher UR first.
    board = rv.compare_runs([matcha_runs[m] for m in ("half-kept", "rarely-kept", "mostly-kept")])[0]
    assert [(row["rank"], row["model"]) for row in board.rows] == [
        ("1", "mostly-kept"), ("2", "half-kept"), ("3", "rarely-kept")]
    # Perturbed benchmarks: lower RB-index first (a smaller accuracy drop).
    original = [True] * 16 + [False] * 4
    runs = [robustness_store(tmp_path / name, label_mode="hard", model_name=f"hf:{name}",
                             correct={"original": original, "C-pinyin": [True] * right + [False] * (20 - right)},
                             unparsed={"original": 0, "C-pinyin": 0})
            for name, right in (("fragile", 4), ("sturdy", 16), ("middling", 10))]
    board = rv.compare_runs(runs, max_width=1.0)[0]
    assert [(row["rank"], row["model"]) for row in board.rows] == [("1", "sturdy"), ("2", "middling"),
                                                                   ("3", "fragile")]


def test_soft_and_hard_label_runs_are_not_ranked_together(tmp_path: Path) -> None:
    original = [True] * 15 + [False] * 5
    soft = robustness_store(tmp_path / "soft", label_mode="soft", model_name="hf:soft-model",
                            correct={"original": original, "C-pinyin": original}, unparsed={"original": 0, "C-pinyin": 0})
    hard = robustness_store(tmp_path / "hard", label_mode="hard", model_name="hf:hard-model",
                            correct={"original": original, "C-pinyin": [False] * 20},
                            unparsed={"original": 0, "C-pinyin": 20})
    boards = rv.compare_runs([soft, hard], max_width=1.0)
    assert [[row["model"] for row in board.rows] for board in boards] == [["soft-model"], ["hard-model"]]
    assert all(board.rows[0]["rank"] == "1" for board in boards)
    assert boards[0].apart == "not comparable with the other groups: label_mode=soft"
    assert boards[1].apart == "not comparable with the other groups: label_mode=hard"
    assert [(board.rows[0]["label_mode"], board.rows[0]["unparsed"]) for board in boards] == [
        ("soft", "original 0/20, C-pinyin 0/20"), ("hard", "original 0/20, C-pinyin 20/20")]
    done = cli_inproc("runs", "compare", str(soft), str(hard), "--max-interval-width", "1")
    assert done.returncode == 0, done.stderr
    assert "(comparable group 2 of 2)" in done.stdout and "label_mode=hard" in done.stdout
    assert "C-pinyin 20/20" in done.stdout


def test_data_content_and_success_rule_separate_groups_the_seed_does_not(tmp_path: Path) -> None:
    kinds = ["unsuccessful"] * 12

    def run(name: str, seed: int, **options: object) -> Path:
        return matcha_store(tmp_path / name, 12, kinds=kinds, model_name=f"hf:{name}", seed=seed, **options)  # type: ignore[arg-type]

    old = run("old", 0)  # made before --success-check: its rule was "final"
    final = run("final", 1, hyperparameters={"success_check": "final"})
    other_data = run("other-data", 2, identity={"data_sha256": "1" * 64})
    checkpoint = run("checkpoint", 3, hyperparameters={"success_check": "insertion-and-final"})
    boards = rv.compare_runs([old, final, other_data, checkpoint], max_width=1.0)
    assert [sorted(board.models) for board in boards] == [["final", "old"], ["other-data"], ["checkpoint"]]
    assert "data_sha256=" in boards[1].apart and "config.success_check=insertion-and-final" in boards[2].apart


def test_every_number_has_its_n_and_interval_in_csv_and_latex(matcha_runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "board.csv"
    runs = [str(matcha_runs[m]) for m in ("one-rated", "mostly-kept")]
    assert cli_inproc("runs", "compare", *runs, "--format", "csv", "--output", str(out)).returncode == 0
    rows = {row["model"]: row for row in csv.DictReader(out.open(encoding="utf-8"))}
    one = rows["one-rated"]
    assert (one["n"], one["n_attacked"], one["ur_n"], one["acc_n"]) == ("5", "1", "1", "5")
    assert (float(one["ur"]), float(one["ur_ci_low"]), float(one["ur_ci_high"])) == (1.0, pytest.approx(0.2065, abs=1e-4), 1.0)
    assert one["rank"] == "-" and one[UNRANKED] == "n_attacked = 1 < 10" and one["group"] == rows["mostly-kept"]["group"]
    latex = cli_inproc("runs", "compare", *runs, "--format", "latex")
    assert latex.returncode == 0, latex.stderr
    assert r"\toprule" in latex.stdout and r"\bottomrule" in latex.stdout
    # one-rated's UR over its n_attacked of 1, then mostly-kept's over 40 (the n column before the rates)
    assert r"one-rated & 5 & 100.0 {\scriptsize[56.6, 100.0]} & 1 & 100.0 {\scriptsize[20.7, 100.0]}" in latex.stdout
    assert r"& 40 & 75.0 {\scriptsize[59.8, 85.8]}" in latex.stdout


def test_thresholds_out_of_range_are_one_line(matcha_runs: dict[str, Path]) -> None:
    with pytest.raises(UserError, match="max_width 0: give a share"):
        rv.compare_runs([matcha_runs["one-rated"]], max_width=0)
    with pytest.raises(UserError, match="min_n -1: give a whole number"):
        rv.compare_runs([matcha_runs["one-rated"]], min_n=-1)
    done = cli_inproc("runs", "compare", str(matcha_runs["one-rated"]), "--max-interval-width", "50")
    assert done.returncode == 2 and "--max-interval-width 50.0: give a share" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_runs_show_prints_each_rate_with_its_n_and_interval(matcha_runs: dict[str, Path]) -> None:
    done = cli_inproc("runs", "show", str(matcha_runs["one-rated"]), "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    rates = shown["rates"]
    assert {k: rates[k] for k in ("acc", "ur", "sr", "wr", "unjudged_rate")} == {
        "acc": "100.0 % [56.6, 100.0], n = 5", "ur": "100.0 % [20.7, 100.0], n_attacked = 1",
        "sr": "0.0 % [0.0, 79.3], n_attacked = 1", "wr": "0.0 % [0.0, 79.3], n_attacked = 1",
        "unjudged_rate": "0.0 % [0.0, 79.3], n_attacked = 1"}
    assert rates["ur[judged]"].startswith("100.0 % [20.7, 100.0], n_judged (secondary view) = 1")
    assert shown["outcomes"] == "changed 0 + broken 0 + intact 1 + unjudged 0 + clean wrong 0 = 1"
    assert shown["left_out"] == {"skip_reasons": {"no answer in the clean completion": 4},
                                 "outside_among_judged": {"unjudged": 0, "clean_cot_wrong": 0}, "unjudged_reasons": {}}
    shown = json.loads(cli_inproc("runs", "show", str(matcha_runs["none-rated"]), "--json").stdout)
    assert shown["left_out"]["skip_reasons"] == {"no answer in the clean completion": 5}


@needs_modules("pandas")
def test_results_frame_is_one_tidy_row_per_run_and_metric(matcha_runs: dict[str, Path], tmp_path: Path) -> None:
    original = [True] * 15 + [False] * 5
    soft = robustness_store(tmp_path / "soft", label_mode="soft", correct={"original": original, "C-pinyin": original},
                            unparsed={"original": 0, "C-pinyin": 0})
    hard = robustness_store(tmp_path / "hard", label_mode="hard", correct={"original": original, "C-pinyin": original},
                            unparsed={"original": 0, "C-pinyin": 5})
    frame = rv.results_frame([matcha_runs["one-rated"], matcha_runs["mostly-kept"], soft, hard])
    assert list(frame.columns[:11]) == ["run", "method", "model", "dataset", "metric", "value", "n", "denominator",
                                        "ci_low", "ci_high", "comparability_key"]
    # MATCHA: acc, ur, sr, wr, unjudged, clean wrong and UR/SR/WR among the judged; robustness: two accuracies
    # and the RB-index
    assert len(frame) == 2 * 9 + 2 * 3
    ur = frame[(frame.model == "one-rated") & (frame.metric == "ur")].iloc[0]
    assert (ur.value, ur.n, ur.denominator, ur.ci_high) == (1.0, 1, "n_attacked", 1.0)
    judged = frame[(frame.model == "one-rated") & (frame.metric == "ur[judged]")].iloc[0]
    assert judged.denominator == "n_judged (secondary view)"
    assert ur.ci_low == pytest.approx(0.2065, abs=1e-4)
    keys = frame.groupby("run").comparability_key.first()
    assert keys[str(matcha_runs["one-rated"])] == keys[str(matcha_runs["mostly-kept"])]
    assert keys[str(soft)] != keys[str(hard)]
    assert set(frame[frame.method == "robustness"].label_mode) == {"soft", "hard"}
    pinyin = frame[(frame.run == str(hard)) & (frame.metric == "acc[C-pinyin]")].iloc[0]
    assert (pinyin.value, pinyin.n, pinyin.n_unparsed) == (0.75, 20, 5)
    shown = json.loads(cli_inproc("runs", "show", str(hard), "--json").stdout)["rates"]
    assert shown["acc[C-pinyin]"] == "75.0 % [53.1, 88.8], n = 20 (hard labels, 5 unparsed (counted wrong))"
