"""The real ``robusteval`` CLI: eval end to end on a tiny model, resume after SIGKILL, --config, runs show/export.

Subprocesses where the process boundary matters (exit codes, stderr, kills); ``main(argv)`` in-process
elsewhere to keep the suite fast.
"""

from __future__ import annotations

import argparse
import csv
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.datafiles import gsm8k_records, write_gsm8k
from helpers.runs import cli, records, run_and_kill, summary, units
from helpers.servers import fake_openai_server, serve_transformers
from helpers.shared import shared_file
from robusteval.cli.main import build_parser, main
from robusteval.store import DB_NAME


@pytest.fixture(scope="module")
def gsm8k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GSM8K-format file of 20 synthetic questions: these tests exercise the CLI, not the benchmark's text
    (the real file is read by test_eval_on_the_real_gsm8k_file only)."""
    return write_gsm8k(tmp_path_factory.mktemp("gsm8k") / "test.jsonl", 20)


def eval_args(
    model_dir: Path, data: Path, out: Path, *extra: str, limit: int = 20, max_new_tokens: int = 16
) -> list[str]:
    return [
        "eval", "--model", f"hf:{model_dir}", "--dataset", "gsm8k", "--data-file", str(data),
        "--limit", str(limit), "--max-new-tokens", str(max_new_tokens), "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def gsm8k_run(tiny_llama_dir: Path, gsm8k: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One finished `robusteval eval` run (20 gsm8k examples), made by the real command in a subprocess."""
    out = tmp_path_factory.mktemp("cli") / "gsm8k-run"
    result = cli(*eval_args(tiny_llama_dir, gsm8k, out))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert "answer-first accuracy" in result.stdout
    yield out


# ----------------------------------------------------------------------------------------- eval


def test_eval_writes_summary_and_units(gsm8k_run: Path) -> None:
    result = summary(gsm8k_run)
    assert result["n"] == 20
    assert 0 <= result["n_correct"] <= 20
    assert result["dataset"] == "gsm8k" and result["model"].startswith("hf:")
    assert result["acc"] == pytest.approx(result["n_correct"] / 20)
    assert (gsm8k_run / DB_NAME).is_file()
    stored = units(gsm8k_run)
    assert len(stored) == 20 and {s for s, _, _ in stored} == {"answer_first"}
    db = sqlite3.connect(f"file:{gsm8k_run / DB_NAME}?mode=ro", uri=True)
    try:
        records = [json.loads(r) for (r,) in db.execute("SELECT record FROM units ORDER BY rowid")]
        identity = json.loads(db.execute("SELECT value FROM run WHERE name='identity'").fetchone()[0])
    finally:
        db.close()
    assert all(r["n_tokens"] <= 16 for r in records)
    assert all(r["finish_reason"] in ("stop", "length") for r in records)
    assert sum(r["correct"] for r in records) == result["n_correct"]
    assert identity["max_new_tokens"] == 16 and identity["dataset"] == "gsm8k"
    assert len(identity["data_sha256"]) == 64


def test_eval_second_run_computes_nothing(
    gsm8k_run: Path, tiny_llama_dir: Path, gsm8k: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = units(gsm8k_run)
    first_summary = summary(gsm8k_run)
    assert main(eval_args(tiny_llama_dir, gsm8k, gsm8k_run)) == 0
    # Same rows, same order, same creation times: nothing was recomputed or rewritten.
    assert units(gsm8k_run) == before
    assert summary(gsm8k_run) == first_summary
    # A smaller --limit (info, not identity) reuses the stored units too.
    assert main(eval_args(tiny_llama_dir, gsm8k, gsm8k_run, limit=5)) == 0
    assert units(gsm8k_run) == before
    assert summary(gsm8k_run)["n"] == 5
    assert main(eval_args(tiny_llama_dir, gsm8k, gsm8k_run)) == 0  # leave the run as it was for other tests
    capsys.readouterr()


def test_eval_with_other_settings_refuses_the_run_dir(
    gsm8k_run: Path, tiny_llama_dir: Path, gsm8k: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = units(gsm8k_run)
    assert main(eval_args(tiny_llama_dir, gsm8k, gsm8k_run, max_new_tokens=17)) == 2
    err = capsys.readouterr().err
    assert "max_new_tokens: stored 16, now 17" in err and "another run directory" in err
    assert units(gsm8k_run) == before


def test_failed_model_load_does_not_claim_the_run_dir(
    tmp_path: Path, tiny_llama_dir: Path, gsm8k: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in --model must not bind --out to the typo: fixing the flag and re-running has to work."""
    out = tmp_path / "run"
    typo = tmp_path / "no-such-model"
    args = eval_args(tiny_llama_dir, gsm8k, out, limit=2, max_new_tokens=4)
    args[args.index("--model") + 1] = f"hf:{typo}"
    assert main(args) == 2
    assert "no such model directory" in capsys.readouterr().err
    assert main(eval_args(tiny_llama_dir, gsm8k, out, limit=2, max_new_tokens=4)) == 0, capsys.readouterr().err
    assert summary(out)["n"] == 2


def test_eval_resumes_after_sigkill(
    tiny_llama_dir: Path, gsm8k: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "killed"
    args = eval_args(tiny_llama_dir, gsm8k, out, "--batch-size", "1", max_new_tokens=48)
    stored = run_and_kill(args, out, stage="answer_first", at_least=3, logs=tmp_path, deadline_s=90)
    assert 3 <= len(stored) < 20, len(stored)
    created = {key: at for _, key, at in stored}

    assert main(args) == 0, capsys.readouterr().err  # the same command resumes
    final = units(out)
    assert len(final) == 20
    assert len({key for _, key, _ in final}) == 20
    # Units stored before the kill were kept as they were, not computed again.
    assert {key: at for _, key, at in final if key in created} == created
    assert summary(out)["n"] == 20


def test_eval_on_the_real_gsm8k_file(tiny_llama_dir: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The one test here that reads the shared GSM8K file: golds and ids come from its first lines."""
    data = shared_file("gsm8k/test.jsonl")
    raw = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()[:3]]
    out = tmp_path / "real"
    assert main(eval_args(tiny_llama_dir, data, out, limit=3, max_new_tokens=8)) == 0, capsys.readouterr().err
    stored = records(out, "answer_first")
    # The gold is what follows "#### " in the raw solution, thousands separators dropped.
    assert [r["gold"] for r in stored] == [row["answer"].split("#### ")[-1].strip().replace(",", "") for row in raw]
    assert [r["id"] for r in stored] == ["gsm8k-0", "gsm8k-1", "gsm8k-2"]
    assert [r["question"] for r in stored] == [row["question"] for row in raw]
    assert summary(out)["n"] == 3


def test_synthetic_golds_are_stored(gsm8k_run: Path) -> None:
    # The synthetic questions are additions a + b; their golds, stored in file order.
    expected = [row["answer"].rsplit("#### ", 1)[1] for row in gsm8k_records(20)]
    assert [r["gold"] for r in records(gsm8k_run, "answer_first")] == expected


# ----------------------------------------------------------------------------------------- bad input


def test_malformed_jsonl_is_one_line_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "broken-data.jsonl"
    data.write_text(
        '{"id": "a", "question": "1 + 1?", "answer": "2"}\n'
        '{"id": "b", "question": "2 + 2?", "answer": "4"}\n'
        '{"id": "c", "question": oops}\n'
        '{"id": "d", "question": "3 + 3?", "answer": "6"}\n',
        encoding="utf-8",
    )
    out = tmp_path / "out"
    result = cli("eval", "--model", "hf:/nonexistent-model", "--dataset", "jsonl", "--data-file", str(data),
                 "--out", str(out))  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "broken-data.jsonl:3" in lines[0]
    assert "Traceback" not in result.stderr
    assert not out.exists()  # nothing was started


def test_missing_required_flag_is_exit_2(tmp_path: Path) -> None:
    result = cli("eval", "--dataset", "gsm8k", "--out", str(tmp_path / "o"))
    assert result.returncode == 2
    assert "--model" in result.stderr and "Traceback" not in result.stderr


# ----------------------------------------------------------------------------------------- --config


def write_toml(path: Path, **values: object) -> Path:
    lines = [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stored_completions(out: Path) -> list[str]:
    db = sqlite3.connect(f"file:{out / DB_NAME}?mode=ro", uri=True)
    try:
        return [json.loads(r)["completion"] for (r,) in db.execute("SELECT record FROM units ORDER BY rowid")]
    finally:
        db.close()


def test_config_file_works_like_flags_and_flags_win(
    tiny_llama_dir: Path, gsm8k: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    by_flags = tmp_path / "by-flags"
    assert main(eval_args(tiny_llama_dir, gsm8k, by_flags, limit=4, max_new_tokens=8)) == 0
    by_file = tmp_path / "by-file"
    config = write_toml(
        tmp_path / "run.toml",
        model=f"hf:{tiny_llama_dir}",
        dataset="gsm8k",
        **{"data-file": str(gsm8k), "max_new_tokens": 8},  # both spellings of a flag name are accepted
        limit=4,
        out=str(by_file),
    )
    assert main(["eval", "--config", str(config)]) == 0, capsys.readouterr().err
    assert summary(by_file) == summary(by_flags)
    assert stored_completions(by_file) == stored_completions(by_flags)
    # Command-line flags win over the file.
    override = tmp_path / "override"
    assert main(["eval", "--config", str(config), "--limit", "2", "--out", str(override)]) == 0
    assert summary(override)["n"] == 2
    assert stored_completions(override) == stored_completions(by_flags)[:2]
    capsys.readouterr()


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"temperature": 0.5}, "temperature: unknown key"),
        ({"limit": "many"}, "limit: expected a whole number, got 'many'"),
        ({"dataset": "imagenet"}, "dataset: 'imagenet' is not one of"),
    ],
)
def test_config_file_errors_name_the_key(
    tmp_path: Path, extra: dict[str, object], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    values: dict[str, object] = {"model": "hf:/nonexistent", "dataset": "gsm8k", "out": str(tmp_path / "o")}
    config = write_toml(tmp_path / "bad-run.toml", **{**values, **extra})
    assert main(["eval", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and named in err and "bad-run.toml" in err
    assert not (tmp_path / "o").exists()


def test_config_file_missing_or_invalid(tmp_path: Path) -> None:
    result = cli("eval", "--config", str(tmp_path / "absent.toml"))
    assert result.returncode == 2 and "absent.toml" in result.stderr and "Traceback" not in result.stderr
    broken = tmp_path / "broken.toml"
    broken.write_text('model = "hf:/x\n', encoding="utf-8")
    result = cli("eval", "--config", str(broken))
    assert result.returncode == 2 and "broken.toml" in result.stderr and "Traceback" not in result.stderr


# ----------------------------------------------------------------------------------------- --help


def _leaf_commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path
        return
    for action in subs:
        for name, sub in action.choices.items():
            yield from _leaf_commands(sub, (*path, name))


LEAVES = sorted(_leaf_commands(build_parser()))


def test_every_command_is_reached() -> None:
    assert {("eval",), ("runs", "show"), ("runs", "export"), ("quickstart",)} <= set(LEAVES)


@pytest.mark.parametrize("command", LEAVES, ids=" ".join)
def test_help_of_every_command_has_an_example(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "example:" in text
    example = text.split("example:", 1)[1]
    assert "robusteval " + " ".join(command) in example  # the example runs this very command
    assert "--config" in text


def test_top_level_help_and_version() -> None:
    result = cli("--help")
    assert result.returncode == 0 and "eval" in result.stdout and "runs" in result.stdout
    result = cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("robusteval ")


# ----------------------------------------------------------------------------------------- runs show/export


def test_runs_show(gsm8k_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "show", str(gsm8k_run), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["n"] == 20
    assert report["units"] == {"answer_first": 20}
    assert report["identity"]["command"] == "eval" and report["identity"]["max_new_tokens"] == 16
    assert "robusteval_version" in report["info"]


def test_runs_show_on_a_non_run_dir_is_exit_2(tmp_path: Path) -> None:
    result = cli("runs", "show", str(tmp_path))
    assert result.returncode == 2
    assert "not a robusteval run directory" in result.stderr and "Traceback" not in result.stderr


def test_runs_export_csv(gsm8k_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "f.csv"
    result = cli("runs", "export", str(gsm8k_run), "--format", "csv", "--output", str(target))
    assert result.returncode == 0, result.stderr
    assert "wrote 20 records" in result.stderr
    with target.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        header = reader.fieldnames or []
    assert len(rows) == 20
    assert {"stage", "key", "example_id", "created", "completion", "gold", "correct"} <= set(header)
    # Header + 20 rows (a completion with a newline spans lines inside its quotes).
    assert len(target.read_text(encoding="utf-8").splitlines()) >= 21
    assert [r["key"] for r in rows] == [k for _, k, _ in units(gsm8k_run)]
    assert {r["stage"] for r in rows} == {"answer_first"}


def test_runs_export_jsonl(gsm8k_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "f.jsonl"
    assert main(["runs", "export", str(gsm8k_run), "--format", "jsonl", "--output", str(target)]) == 0
    lines = target.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20
    rows = [json.loads(line) for line in lines]
    assert [r["key"] for r in rows] == [k for _, k, _ in units(gsm8k_run)]
    assert all({"stage", "key", "example_id", "record"} <= set(r) for r in rows)
    assert all(isinstance(r["record"]["completion"], str) for r in rows)
    capsys.readouterr()
    # Default output is stdout; --stage filters.
    assert main(["runs", "export", str(gsm8k_run), "--stage", "answer_first"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 20
    # A stage the run does not hold is refused in one line naming the ones it has (it once wrote nothing, silently).
    assert main(["runs", "export", str(gsm8k_run), "--stage", "no-such-stage"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no stage 'no-such-stage' in this run; its stages: answer_first" in captured.err


# ----------------------------------------------------------------------------------------- openai backend


def test_eval_through_openai_backend_sends_the_exemplars(gsm8k: Path, tmp_path: Path) -> None:
    """Each request to an OpenAI-compatible server carries the full prompt: exemplar prefix + question."""
    from robusteval.prompts.answer_first import AnswerFirstPrompt, load_exemplars

    prompt = AnswerFirstPrompt(load_exemplars("math"))
    out = tmp_path / "fake-run"
    with fake_openai_server(tmp_path) as server:
        result = cli("eval", "--model", f"openai:fake-model@{server.base_url}", "--dataset", "gsm8k",
                     "--data-file", str(gsm8k), "--limit", "3", "--max-new-tokens", "8", "--out", str(out))  # fmt: skip
        requests = server.requests()
    assert result.returncode == 0, result.stderr[-3000:]
    assert summary(out)["n"] == 3 and len(units(out)) == 3
    assert len(requests) == 3
    for request in requests:
        body = request["body"]
        assert body["max_tokens"] == 8 and body["temperature"] == 0.0
        assert body["prompt"].endswith("\nA:")
        assert body["prompt"].startswith(prompt.prefix), "the in-context exemplars were not sent"


@pytest.fixture(scope="module")
def served_tiny_llama(tiny_llama_dir: Path) -> Iterator[str]:
    """``transformers serve`` on the same tiny Llama the hf tests use.

    Not the shared ``tiny_served_model``: its word-level tokenizer cannot encode the answer-first stop
    strings ("\nQ:"), and ``transformers serve`` answers such requests with HTTP 500.
    """
    with serve_transformers(tiny_llama_dir, log_path=tiny_llama_dir.parent / "cli-serve.log") as base_url:
        yield base_url


@pytest.mark.slow
def test_eval_through_openai_backend_matches_hf(
    served_tiny_llama: str,
    tiny_llama_dir: Path,
    gsm8k: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Greedy answers of the same model agree whether it runs in-process (hf:) or behind a server (openai:)."""
    out = tmp_path / "openai-run"
    args = ["eval", "--model", f"openai:{tiny_llama_dir}@{served_tiny_llama}", "--dataset", "gsm8k",
            "--data-file", str(gsm8k), "--limit", "3", "--max-new-tokens", "8", "--out", str(out)]  # fmt: skip
    result = cli(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    assert summary(out)["n"] == 3
    assert summary(out)["model"] == f"openai:{tiny_llama_dir}@{served_tiny_llama}"
    before = units(out)
    assert len(before) == 3
    again = cli(*args)
    assert again.returncode == 0 and units(out) == before  # resumed: no request recomputed

    hf_out = tmp_path / "hf-run"
    assert main(eval_args(tiny_llama_dir, gsm8k, hf_out, limit=3, max_new_tokens=8)) == 0
    capsys.readouterr()
    assert stored_completions(out) == stored_completions(hf_out)
