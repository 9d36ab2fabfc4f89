"""torch's CPU thread count: the pure decision, the flag's precedence, and the environment a fresh process gets
before torch starts (real child processes, real torch, a real CLI run on the tiny model)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.runs import ENV
from robusteval.errors import UserError
from robusteval.models.threads import decide_threads, parse_threads, usable_cores
from robusteval.store import SUMMARY_NAME


@pytest.mark.parametrize(("cores", "busy", "load", "expected"), [
    (2, 0.05, 0.2, 2),    # idle: every core
    (2, 1.0, 1.9, 1),     # one busy process beside us: its core is left to it
    (2, 0.05, 1.3, 2),    # CI's quick-start right after pip install (load 1.3 remembered): every core
    (2, 0.9, None, 1),    # no load average (not Linux): the sample alone
    (2, None, 1.2, 1),    # no /proc/stat: the load average alone
    (2, 0.1, 1.0, 2),     # a command that just ended still counts in the load average, not in the sample: idle
    (2, 1.0, 0.1, 1),     # one that just started is not in the load average yet: the sample sees it
    (2, 0.4, 0.3, 2),     # under half a core busy: not a core
    (2, 0.5, 0.0, 1),     # half a core busy counts as one (a thread too many costs more than one too few)
    (2, 6.0, 9.9, 1),     # a saturated machine: at least one thread
    (8, 3.2, 2.9, 5),
    (16, None, None, 16),  # nothing measured: every core
    (1, 1.0, 2.0, 1),
])
def test_auto_leaves_the_busy_cores_to_the_other_processes(cores: int, busy: float | None, load: float | None,
                                                           expected: int) -> None:
    count, others = decide_threads(None, cores=cores, busy=busy, load=load)
    assert count == expected
    assert others is not None and 0 <= others <= cores


@pytest.mark.parametrize("requested", [1, 2, 3, 32])
def test_an_explicit_count_wins_over_any_load(requested: int) -> None:
    assert decide_threads(requested, cores=2, busy=2.0, load=9.0) == (requested, None)
    assert decide_threads(requested, cores=64, busy=0.0, load=0.0) == (requested, None)


def test_parse_threads() -> None:
    assert parse_threads("auto") is None and parse_threads(" AUTO ") is None
    assert parse_threads("3") == 3
    for bad in ("0", "-1", "two", "1.5", ""):
        with pytest.raises(UserError, match=r"^--threads: expected auto or a positive whole number"):
            parse_threads(bad)
    with pytest.raises(UserError, match=r"^ROBUSTEVAL_THREADS: "):
        parse_threads("x", field="ROBUSTEVAL_THREADS")


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in ENV.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "ROBUSTEVAL_THREADS")}
    return {**env, **extra}


# What torch sees in a fresh process after robusteval's command-line setup: the environment at the moment torch
# is imported (OpenMP reads it then) and the thread count torch then uses.
_CHILD = """
import json, os, sys
from robusteval.cli.main import parse_args
from robusteval.models.threads import configure_threads, parse_threads, apply_threads
args = parse_args(sys.argv[1:])
configure_threads(parse_threads(args.threads))
assert "torch" not in sys.modules, "robusteval's setup imported torch before the environment was set"
seen = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
import torch
choice = apply_threads()
print(json.dumps({"seen": seen, "threads": torch.get_num_threads(), "choice": choice.as_dict(),
                  "after": os.environ.get("OMP_NUM_THREADS")}))
"""


def _child(*flags: str, **env: str) -> dict:  # type: ignore[type-arg]
    argv = ["eval", "--model", "hf:unused", "--dataset", "jsonl", "--data-file", "unused.jsonl", "--out", "unused", *flags]
    out = subprocess.run([sys.executable, "-c", _CHILD, *argv], capture_output=True, text=True, timeout=120,
                         env=_clean_env(**env))
    assert out.returncode == 0, out.stderr
    result: dict = json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[type-arg]
    result["stderr"] = out.stderr
    return result


def test_threads_flag_reaches_torch_before_it_starts() -> None:
    result = _child("--threads", "1", ROBUSTEVAL_THREADS="3")  # the flag wins over the environment
    assert result["seen"]["OMP_NUM_THREADS"] == "1" and result["threads"] == 1
    assert result["choice"]["source"] == "--threads" and result["choice"]["count"] == 1
    assert result["after"] is None  # put back once torch started: child processes decide for themselves
    if usable_cores() > 1:  # fewer threads than cores: the idle one sleeps, and the choice is said
        assert result["seen"]["OMP_WAIT_POLICY"] == "PASSIVE"
        assert f"torch threads: 1 of {usable_cores()} cores (set by --threads" in result["stderr"]


def test_environment_variable_and_omp_num_threads_decide_without_the_flag() -> None:
    result = _child(ROBUSTEVAL_THREADS="3")
    assert (result["threads"], result["choice"]["source"]) == (3, "ROBUSTEVAL_THREADS")
    result = _child(OMP_NUM_THREADS="2")  # a Ray worker's (or the user's) setting is kept
    assert (result["threads"], result["choice"]["source"]) == (2, "OMP_NUM_THREADS")


def test_auto_decides_from_the_measured_load() -> None:
    result = _child()
    choice = result["choice"]
    assert choice["source"] == "auto" and choice["cores"] == usable_cores()
    assert 1 <= result["threads"] == choice["count"] <= usable_cores()
    assert result["seen"]["OMP_NUM_THREADS"] == str(choice["count"])
    assert choice["busy"] is None or choice["busy"] >= 0


def test_a_bad_count_is_one_line_naming_the_flag(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "robusteval.cli.main", "eval", "--model", "hf:x", "--dataset",
                          "jsonl", "--data-file", "x.jsonl", "--threads", "0"], capture_output=True, text=True,
                         timeout=60, env=_clean_env())
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "argument --threads: expected auto or a positive whole number of threads, got '0'" in out.stderr
    config = tmp_path / "c.toml"
    config.write_text('threads = "many"\n')
    out = subprocess.run([sys.executable, "-m", "robusteval.cli.main", "eval", "--config", str(config), "--model",
                          "hf:x", "--dataset", "jsonl", "--data-file", "x.jsonl"], capture_output=True, text=True,
                         timeout=60, env=_clean_env())
    assert out.returncode == 2 and "Traceback" not in out.stderr and "threads" in out.stderr


def test_a_run_records_the_choice_in_its_summary_and_log(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "q.jsonl"
    data.write_text(json.dumps({"question": "Tom has 2 apples and buys 3 more. How many?", "answer": "5"}) + "\n")
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "robusteval.cli.main", "eval", "--model", f"hf:{tiny_llama_dir}",
                           "--dataset", "jsonl", "--data-file", str(data), "--max-new-tokens", "4", "--device",
                           "cpu", "--threads", "1", "--out", str(out)], capture_output=True, text=True,
                          timeout=180, env=_clean_env())
    assert done.returncode == 0, done.stderr
    recorded = json.loads((out / SUMMARY_NAME).read_text())["environment"]["torch_threads"]
    assert (recorded["count"], recorded["source"], recorded["cores"]) == (1, "--threads", usable_cores())
    assert recorded["line"].startswith(f"torch threads: 1 of {usable_cores()} cores")
    assert recorded["line"] in (out / "run.log").read_text()
