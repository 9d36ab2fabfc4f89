"""``runs compare`` says which runs differ: paired tests on real eval runs of two tiny models, joined on the
example id (McNemar's p recomputed here from the stored records), partial overlap said, and runs of other data
never paired."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.pairedruns import MAX_NEW_TOKENS, answered_by
from helpers.runs import records
from helpers.studies import MATH
from robusteval.cli.main import main
from robusteval.data.spec import DataSpec
from robusteval.evals.answer_first import EvalConfig, evaluate
from robusteval.metrics.significance import binomial_two_sided, holm
from robusteval.models import load_backend
from robusteval.models.generation import GenerationOptions
from robusteval.report.compare import compare_runs

N = 10


@pytest.fixture(scope="module")
def runs(
    tiny_trained_dir: Path, tiny_llama_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare-significance")
    mine = answered_by(tiny_trained_dir, root, N)
    trained, random = load_backend(f"hf:{tiny_trained_dir}"), load_backend(f"hf:{tiny_llama_dir}")
    out = {
        "trained": root / "trained",
        "random": root / "random",
        "random-6": root / "random-6",
        "other-data": root / "other-data",
    }
    config = EvalConfig(data=DataSpec("jsonl", str(mine)),
                        generation=GenerationOptions(max_new_tokens=MAX_NEW_TOKENS))
    evaluate(config, trained, out["trained"])
    evaluate(config, random, out["random"])
    # The same data, fewer examples (a limit is no part of the comparability key): 6 shared examples.
    evaluate(
        EvalConfig(data=DataSpec("jsonl", str(mine), limit=6),
                   generation=GenerationOptions(max_new_tokens=MAX_NEW_TOKENS)),
        random,
        out["random-6"],
    )
    evaluate(
        EvalConfig(data=DataSpec("jsonl", MATH, limit=N),
                   generation=GenerationOptions(max_new_tokens=MAX_NEW_TOKENS)),
        random,
        out["other-data"],
    )
    return out


def _correct(run: Path) -> dict[str, bool]:
    return {r["id"]: r["correct"] for r in records(run, "answer_first")}


def test_compare_tests_every_pair_of_a_group_on_shared_examples(runs: dict[str, Path]) -> None:
    boards = compare_runs([runs["trained"], runs["random"], runs["random-6"], runs["other-data"]], min_n=1)
    grouped = [b for b in boards if b.comparisons]
    assert len(boards) == 2 and len(grouped) == 1  # the other data's run is alone in its group: never paired
    tests = {(Path(c.run_a).name, Path(c.run_b).name): c.test for c in grouped[0].comparisons}
    assert set(tests) == {("trained", "random"), ("trained", "random-6"), ("random", "random-6")}
    trained, random = _correct(runs["trained"]), _correct(runs["random"])
    only_a = sum(1 for i in trained if trained[i] and not random[i])
    only_b = sum(1 for i in trained if random[i] and not trained[i])
    assert only_a >= 8
    full = tests[("trained", "random")]
    assert (full.test, full.discordant, full.n) == ("McNemar exact", (only_a, only_b), N)
    assert full.p == pytest.approx(binomial_two_sided(only_b, only_a + only_b)) and full.note == ""
    partial = tests[("trained", "random-6")]
    assert partial.n == 6 and "the 6 examples both runs hold (A 10, B 6)" in partial.note
    ps = [t.p for t in tests.values()]
    assert [t.p_holm for t in tests.values()] == pytest.approx(holm(ps))  # type: ignore[arg-type]


def test_runs_compare_prints_the_pairwise_tests(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "runs",
                "compare",
                str(runs["trained"]),
                str(runs["random"]),
                str(runs["other-data"]),
                "--min-n",
                "1",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "pairwise tests (paired on shared examples)" in out and "McNemar exact" in out
    assert "differ:" in out and "p (Holm)" in out
    assert "not paired: never tested against each other" in out
