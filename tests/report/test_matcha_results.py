"""MATCHA and its transfer are methods of the registry (``attacks/matcha/registration.py``), and their results
contract (``attacks.matcha.results``) reads real stored runs of the tiny models (``helpers.reportruns``): the
same numbers, outcomes, leaderboards, section, paper tables and comparability key the generic surfaces show."""

from __future__ import annotations

from pathlib import Path

from robusteval.attacks.base import attack_names
from robusteval.attacks.matcha.config import MatchaRunConfig
from robusteval.methods import method_named, method_of_command, methods, results_of_command
from robusteval.report.build import section_of
from robusteval.report.collect import collect
from robusteval.report.comparability import comparability_key
from robusteval.report.compare import all_boards, leaderboard_groups
from robusteval.report.latex_tex import TexTable
from robusteval.report.method_results import MethodResults
from robusteval.report.model import Table
from robusteval.report.pairing import run_outcomes
from robusteval.report.rates import run_rates
from robusteval.runs import load_run
from robusteval.store.stages import STAGES
from robusteval.studies.methods import get_method, method_names


def test_matcha_and_transfer_are_registered_methods() -> None:
    matcha, transfer = method_named("matcha"), method_named("transfer")
    assert matcha is not None and transfer is not None
    assert (matcha.command, matcha.section, matcha.order) == ("attack matcha", "matcha", 20)
    assert matcha.headlines == (("sr", "lower"), ("ur", "higher"), ("wr", "lower"))
    assert (transfer.command, transfer.section, transfer.order) == ("transfer", "matcha", 25)
    assert method_of_command("attack matcha") is matcha and method_of_command("transfer") is transfer
    assert [spec.name for spec in methods()].index("matcha") < [spec.name for spec in methods()].index("transfer")
    assert section_of("attack matcha") == section_of("transfer") == "matcha"
    for command in ("attack matcha", "transfer"):
        assert isinstance(results_of_command(command), MethodResults)
    # Each method's own board, found through the registry (and once: no built-in board of the same name).
    assert [board.method for board in all_boards()].count("matcha") == 1
    assert {"matcha", "transfer"} <= {board.method for board in all_boards()}
    # Their stages are registered from the modules the specs name.
    assert {"matcha_clean", "matcha_attack", "matcha_outcome", "transfer_outcome"} <= {entry.name for entry in STAGES}


def test_the_study_runs_matcha_through_its_runner_and_the_attack_command_still_finds_it() -> None:
    assert "matcha" in attack_names()  # `robusteval attack matcha` reads ATTACKS
    assert "matcha" in method_names() and "transfer" not in method_names()  # transfer has no study runner
    method = get_method("matcha")
    assert method is not None and method.name == "matcha" and method.config_type is MatchaRunConfig
    assert method.data_kind == "qa" and method.headlines == (("sr", "lower"), ("ur", "higher"), ("wr", "lower"))


def test_the_results_contract_reads_stored_runs(all_runs: dict[str, Path]) -> None:
    matcha, transfer = load_run(all_runs["matcha"]), load_run(all_runs["transfer"])
    results, transferred = results_of_command(matcha.command), results_of_command(transfer.command)
    assert results is not None and transferred is not None and results is not transferred

    rates = {rate.metric: rate for rate in results.rates(matcha)}
    summary = matcha.summary or {}
    assert rates["acc"].num.value == summary["acc"] and rates["acc"].num.n == summary["n"]
    for metric in ("ur", "sr", "wr"):  # over every attacked question, with the summary's interval
        assert rates[metric].num.value == summary[metric] and rates[metric].num.n == summary["n_attacked"]
        assert rates[metric].denominator == "n_attacked" and list(rates[metric].num.ci or ()) == list(summary["ci95"][metric])
        outcomes = results.outcomes(matcha, metric, summary[metric]) if results.outcomes else None
        assert outcomes is not None and outcomes.reproduces()
    assert [rate.metric for rate in run_rates(matcha)] == list(rates)  # what `runs show` and results_frame read
    moved = {rate.metric: rate for rate in transferred.rates(transfer)}
    assert moved["transfer_rate"].num.value == (transfer.summary or {})["transfer_rate"]
    assert run_outcomes(transfer, "transfer_rate", moved["transfer_rate"].num.value) is not None
    assert results.outcomes is not None and results.outcomes(matcha, "ur[ours]", None) is None

    inputs = collect([all_runs["matcha"], all_runs["transfer"]])
    (board,) = results.boards
    (group,) = leaderboard_groups(board, inputs)
    assert [row["run"] for row in group.rows] == [str(matcha.path)] and group.rows[0]["ur"] == rates["ur"].num
    (moved_board,) = transferred.boards
    assert [row["run"] for row in leaderboard_groups(moved_board, inputs)[0].rows] == [str(transfer.path)]

    # One section shows both (transfer has none of its own); the paper's tables replace the board's LaTeX.
    assert results.section is not None and transferred.section is None and transferred.latex is None
    section = results.section(inputs)
    assert section is not None and section.id == "matcha"
    captions = [block.caption for block in section.blocks if isinstance(block, Table)]
    assert any(c.startswith("Token-level attack") for c in captions)
    assert any(c.startswith("Transfer runs") for c in captions)
    assert results.latex is not None
    tables = results.latex(inputs)
    assert tables and all(isinstance(t, TexTable) for t in tables)
    assert "paper Table 1 layout" in tables[0].comments

    # The comparability key holds the rules the run resolved (runs made before the options: final, ours).
    key = comparability_key(matcha)
    assert key["method"] == "attack matcha" and key["config.counting"] == "ours"
    assert key["config.success_check"] == summary.get("success_check", "final")
    assert "config.counting" not in comparability_key(transfer)
