"""Soft labels, log-prob confidence and their fallbacks over an OpenAI-compatible API, end to end through the CLI:
the tiny NLI classifier served with prompt log-probs gives the runs the hf backend gives on the same weights, and
served without them falls back (or refuses, when log-probs were asked for) with one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.datafiles import write_ocnli
from helpers.runs import records, summary
from helpers.scoring_server import TinyLM, scoring_server
from helpers.shared import needs_modules
from robusteval.cli.main import main
from robusteval.models.tiny import tiny_nli_pairs

pytestmark = needs_modules("pypinyin")  # C-homophone


@pytest.fixture(scope="module")
def nli_lm(tiny_nli_dir: Path) -> TinyLM:
    return TinyLM(tiny_nli_dir)


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ocnli(tmp_path_factory.mktemp("ocnli") / "dev.json", tiny_nli_pairs(6, seed=21))


@pytest.fixture
def echo_server(nli_lm: TinyLM) -> Iterator[str]:
    with scoring_server(nli_lm, "echo") as server:
        yield server.spec("tiny-nli")


def robustness_args(model: str, template: Path, data: Path, out: Path) -> list[str]:
    return ["robustness", "--model", model, "--template", str(template), "--dataset", "ocnli", "--data-file",
            str(data), "--sets", "C-homophone", "--label-mode", "soft", "--bootstrap", "50", "--out", str(out)]


def attack_args(model: str, template: Path, data: Path, out: Path, *extra: str) -> list[str]:
    return ["attack", "wordimportance", "--model", model, "--template", str(template), "--dataset", "ocnli",
            "--data-file", str(data), "--method", "C-homophone", "--rates", "0.1,0.3", "--budget", "30",
            "--out", str(out), *extra]


def test_soft_label_robustness_over_the_api_equals_the_hf_run(tiny_nli_dir: Path, pairs: Path, echo_server: str,
                                                               tmp_path: Path) -> None:
    template = tiny_nli_dir / "template.json"
    assert main(robustness_args(f"hf:{tiny_nli_dir}", template, pairs, tmp_path / "hf")) == 0
    assert main(robustness_args(echo_server, template, pairs, tmp_path / "api")) == 0
    over_api, local = records(tmp_path / "api", "classify"), records(tmp_path / "hf", "classify")
    assert len(over_api) == len(local) >= 6
    for mine, theirs in zip(over_api, local, strict=True):
        assert set(mine["label_logprobs"]) == set(theirs["label_logprobs"])
        for label, value in theirs["label_logprobs"].items():
            assert mine["label_logprobs"][label] == pytest.approx(value, abs=1e-4)
        assert mine["soft_label"] == theirs["soft_label"]
    api_summary, hf_summary = summary(tmp_path / "api"), summary(tmp_path / "hf")
    assert api_summary["label_mode"] == "soft"
    assert api_summary["acc_original"] == hf_summary["acc_original"] and api_summary["acc"] == hf_summary["acc"]


def test_log_prob_confidence_over_the_api_attacks_as_the_hf_backend_does(
        tiny_nli_dir: Path, pairs: Path, nli_lm: TinyLM, tmp_path: Path) -> None:
    template = tiny_nli_dir / "template.json"
    forced = ("--confidence", "logprob", "--limit", "4")
    assert main(attack_args(f"hf:{tiny_nli_dir}", template, pairs, tmp_path / "hf", *forced)) == 0
    with scoring_server(nli_lm, "prompt_logprobs") as server:
        out = tmp_path / "api"
        assert main(attack_args(server.spec("tiny-nli"), template, pairs, out, *forced)) == 0
    api_summary, hf_summary = summary(out), summary(tmp_path / "hf")
    assert api_summary["confidence"] == hf_summary["confidence"] == "logprob"
    # The same confidences give the same word ranking, edits and query counts, so the same attack.
    assert api_summary["by_rate"] == hf_summary["by_rate"]
    assert api_summary["by_rate"]["0.3"]["n_success"] > 0, "no success: the comparison would check little"
    strip = ("status", "queries", "edits", "adversarial")
    assert [{k: r.get(k) for k in strip} for r in records(out, "wordimportance")] == \
        [{k: r.get(k) for k in strip} for r in records(tmp_path / "hf", "wordimportance")]


def test_without_server_log_probs_confidence_falls_back_or_refuses(
        tiny_nli_dir: Path, pairs: Path, nli_lm: TinyLM, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = tiny_nli_dir / "template.json"
    with scoring_server(nli_lm, "plain") as server:
        spec = server.spec("tiny-nli")
        capsys.readouterr()
        assert main(attack_args(spec, template, pairs, tmp_path / "forced", "--confidence", "logprob")) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err
        assert "--confidence: logprob needs label log-probs" in err and "ignored prompt_logprobs" in err
        out = tmp_path / "auto"
        assert main(attack_args(spec, template, pairs, out, "--limit", "2", "--n-samples", "2")) == 0
        assert main(robustness_args(spec, template, pairs, tmp_path / "soft")) == 2
        assert "soft labels need" in capsys.readouterr().err
    assert summary(out)["confidence"] == "sample"
    assert not any("label_logprobs" in r for r in records(out, "classify"))


def test_a_run_is_not_resumed_with_another_estimator(tiny_nli_dir: Path, pairs: Path, echo_server: str,
                                                     tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--confidence auto`` follows the server; a resumed run must not mix two estimators' attacks."""
    template, out = tiny_nli_dir / "template.json", tmp_path / "wi"
    assert main(attack_args(echo_server, template, pairs, out, "--limit", "1")) == 0
    assert summary(out)["confidence"] == "logprob"
    capsys.readouterr()
    # Same run identity (logprobs is not part of it), but auto now resolves to sample.
    assert main(attack_args(echo_server, template, pairs, out, "--limit", "2", "--model-args", "logprobs=off")) == 2
    err = capsys.readouterr().err.strip()
    assert "attacked with confidence logprob" in err and "now gives sample" in err and len(err.splitlines()) == 1
    assert len(records(out, "wordimportance")) == 1
