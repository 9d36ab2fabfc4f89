"""Failures a user can act on end as one line and exit code 2, through the real CLI in a subprocess.

Each fault is real: truncated and garbage model files, GGUF files cut in half, a process whose address space is
capped so a batch cannot be allocated, a tmpfs that fills up, a read-only mount. Anything else is a bug: one
line naming a crash log that holds the traceback, and ``--debug`` prints it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.runs import ENV, cli, units

pytestmark = pytest.mark.slow


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The single ``robusteval: error:`` line of a failed run, checked for exit code 2 and no traceback."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("robusteval: error:")]
    assert len(errors) == 1, result.stderr[-2000:]
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def write_questions(path: Path, n: int, *, words: int = 4) -> Path:
    rows = [{"question": "What is " + " plus ".join(str(j) for j in range(words)) + f"? ({i})", "answer": str(i)}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def eval_args(model: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["eval", "--model", model, "--dataset", "jsonl", "--data-file", str(data), "--max-new-tokens", "4",
            "--out", str(out), *extra]


def copy_model(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


# ----------------------------------------------------------------------------------------- model files


def test_truncated_weights_are_one_line(tiny_llama_dir: Path, tmp_path: Path) -> None:
    model = copy_model(tiny_llama_dir, tmp_path / "model")
    weights = model / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    data = write_questions(tmp_path / "q.jsonl", 2)
    result = cli(*eval_args(f"hf:{model}", data, tmp_path / "out"))
    one_line_error(result, f"hf:{model}: cannot load the model", "SafetensorError", "download it again")
    assert not (tmp_path / "out").exists()  # a model that cannot load claims no --out


def test_garbage_weights_and_unknown_architecture(tiny_llama_dir: Path, tmp_path: Path) -> None:
    garbage = copy_model(tiny_llama_dir, tmp_path / "garbage")
    with (garbage / "model.safetensors").open("r+b") as handle:
        handle.write(b"\x00" * 64)
    data = write_questions(tmp_path / "q.jsonl", 2)
    one_line_error(cli(*eval_args(f"hf:{garbage}", data, tmp_path / "o1")), "cannot load the model")
    alien = copy_model(tiny_llama_dir, tmp_path / "alien")
    config = json.loads((alien / "config.json").read_text())
    (alien / "config.json").write_text(json.dumps({**config, "model_type": "frobnicator"}))
    one_line_error(cli(*eval_args(f"hf:{alien}", data, tmp_path / "o2")), "frobnicator", "cannot load the model")


def _small_gguf(path: Path, architecture: str = "llama") -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_block_count(2)
    writer.add_context_length(64)
    writer.add_embedding_length(16)
    writer.add_tensor("token_embd.weight", np.zeros((32, 16), dtype=np.float32))
    writer.add_tensor("output.weight", np.zeros((32, 16), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("damage", ["truncated", "random", "architecture"])
def test_unreadable_gguf_is_one_line(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "model.gguf"
    if damage == "random":
        path.write_bytes(np.random.default_rng(0).bytes(50_000))
    else:
        _small_gguf(path, "frobnicator" if damage == "architecture" else "llama")
        if damage == "truncated":
            os.truncate(path, path.stat().st_size // 2)
    data = write_questions(tmp_path / "q.jsonl", 2)
    result = subprocess.run(
        [sys.executable, "-m", "robusteval.cli.main", *eval_args(f"hf:{path}", data, tmp_path / "out")],
        capture_output=True, text=True, env={**ENV, "ROBUSTEVAL_CACHE": str(tmp_path / "cache")}, timeout=180,
    )
    one_line_error(result, f"hf:{path}: cannot read this GGUF file")


def test_missing_optional_packages_name_the_extra(tmp_path: Path) -> None:
    """A package absent from this interpreter (None in sys.modules makes its import fail as if uninstalled)."""
    gguf_file = _small_gguf(tmp_path / "m.gguf")
    data = write_questions(tmp_path / "q.jsonl", 2)
    cases = [
        ("accelerate", eval_args(f"hf:{gguf_file}", data, tmp_path / "o1"), "pip install 'robusteval[gguf]'"),
        ("opencc", ["perturb", "--dataset", "jsonl", "--data-file", str(data), "--answer-type", "number",
                    "--language", "zh", "--method", "C-traditional", "--out", str(tmp_path / "p.jsonl")],
         "pip install 'robusteval[zh]'"),
        # Refused before the model loads (the model path need not even exist).
        ("math_verify", eval_args("hf:/nonexistent", data, tmp_path / "o2", "--math-grader", "math-verify"),
         "pip install 'robusteval[math-verify]'"),
        ("antlr4", ["variants", "score", "--instances", str(data), "--predictions", str(data),
                    "--math-grader", "math-verify"], "pip install 'robusteval[math-verify]'"),
    ]
    for module, args, hint in cases:
        launcher = (f"import sys; sys.modules[{module!r}] = None; from robusteval.cli.main import main; "
                    f"sys.exit(main({args!r}))")
        result = subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True, timeout=180,
                                env={**ENV, "ROBUSTEVAL_CACHE": str(tmp_path / "cache")})
        one_line_error(result, f"'{module}' package", hint)


# ----------------------------------------------------------------------------------------------- data


def test_dataset_path_that_is_a_directory(tiny_llama_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "gsm8k"
    folder.mkdir()
    write_questions(folder / "test.jsonl", 2)
    result = cli(*eval_args(f"hf:{tiny_llama_dir}", folder, tmp_path / "out"))
    one_line_error(result, "is a directory, not a data file", str(folder / "test.jsonl"))


def test_malformed_line_is_reported_whatever_the_limit(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = write_questions(tmp_path / "q.jsonl", 6)
    lines = data.read_text().splitlines()
    lines[3] = lines[3][: len(lines[3]) // 2]  # line 4 truncated mid-object
    data.write_text("\n".join(lines) + "\n")
    for limit in ("3", "10"):
        result = cli(*eval_args(f"hf:{tiny_llama_dir}", data, tmp_path / f"out{limit}", "--limit", limit))
        one_line_error(result, f"{data}:4:", "invalid JSON")


# --------------------------------------------------------------------------------------------- memory


#: The address space a run gets: torch and a small model load within it (checked by a run that succeeds).
ADDRESS_SPACE = 4 << 30


def cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def wide_kv_model(tiny_llama_dir: Path, target: Path) -> Path:
    """The tiny Llama's tokenizer on a 1-layer model whose KV cache is wide: 4 KV heads of 4096 dimensions,
    128 KiB a token (keys and values) for 17 MB of weights. A batch's KV cache, not a forward's attention mask
    or logits (which the backend keeps within fixed budgets), is what outgrows memory, as with a large model
    on a small machine."""
    from transformers import AutoConfig, LlamaForCausalLM

    shutil.copytree(tiny_llama_dir, target, ignore=shutil.ignore_patterns("*.safetensors", "config.json"))
    config = AutoConfig.from_pretrained(tiny_llama_dir)
    config.num_hidden_layers, config.head_dim = 1, 4096
    config.num_key_value_heads = config.num_attention_heads
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(target)
    return target


def test_out_of_memory_is_one_line_and_keeps_stored_units(tiny_llama_dir: Path, tmp_path: Path) -> None:
    model = f"hf:{wide_kv_model(tiny_llama_dir, tmp_path / 'wide')}"
    data = write_questions(tmp_path / "q.jsonl", 400, words=1)
    out = tmp_path / "out"

    def capped(*extra: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "robusteval.cli.main", *eval_args(model, data, out, *extra)]
        return subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=300,
                              preexec_fn=cap_address_space)

    # Under the same cap, 4 examples run: the model and a small batch's cache fit.
    first = capped("--limit", "4")
    assert first.returncode == 0, first.stderr[-2000:]
    before = units(out)
    assert len(before) == 4
    # A batch of short questions after the ~600-token exemplar prefix: about a hundred rows fit a forward's
    # attention-mask budget, and the prefix's KV cache forked for them needs ~4 GiB for the keys alone.
    one_line_error(capped("--batch-size", "400"), "out of main (CPU) memory", "smaller --batch-size")
    assert units(out)[:4] == before  # nothing stored was lost


# --------------------------------------------------------------------------------------------- bugs


def test_an_unexpected_error_writes_a_crash_log(tiny_llama_dir: Path, tmp_path: Path) -> None:
    """A fault injected into the eval pipeline stands for a bug: the CLI must not print a traceback."""
    data = write_questions(tmp_path / "q.jsonl", 2)
    args = eval_args(f"hf:{tiny_llama_dir}", data, tmp_path / "out")
    launcher = (
        "import sys\n"
        "import robusteval.evals.answer_first.pipeline as af\n"
        "def broken(*a, **k):\n"
        "    raise ZeroDivisionError('planted fault')\n"
        "af.accuracy_summary = broken\n"
        "import robusteval.cli.eval_cmd as cmd\n"
        "cmd.accuracy_summary = broken\n"
        "from robusteval.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**ENV, "ROBUSTEVAL_CACHE": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-c", launcher, *args], capture_output=True, text=True, env=env,
                            timeout=180)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("robusteval:")]
    assert "internal error" in line and "ZeroDivisionError: planted fault" in line and "--debug" in line
    logs = list((tmp_path / "cache" / "crash").glob("robusteval-crash-*.log"))
    assert len(logs) == 1 and str(logs[0]) in line
    log = logs[0].read_text()
    assert "Traceback" in log and "planted fault" in log and "robusteval eval" in log
    debug = subprocess.run([sys.executable, "-c", launcher, *args, "--debug"], capture_output=True, text=True,
                           env=env, timeout=180)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "planted fault" in debug.stderr
