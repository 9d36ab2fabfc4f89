"""Every run records this process's peak memory in summary.json and run.log (robusteval.peak)."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import robusteval as rv
from robusteval.models.generation import GenerationOptions
from robusteval.peak import describe, gib, peak_memory


def test_peak_memory_is_the_kernels_high_water_mark() -> None:
    before = peak_memory()["rss_bytes"]
    assert before >= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 > 0
    block = bytearray(64 << 20)  # touch 64 MiB more than anything held so far
    block[:: 4096] = b"x" * len(block[:: 4096])
    assert peak_memory()["rss_bytes"] >= before
    assert describe({"rss_bytes": 3 * 2**30}) == "peak memory 3.00 GiB resident"
    assert describe({"rss_bytes": 2**30, "device_bytes": 2**31}) == "peak memory 1.00 GiB resident, 2.00 GiB on the device"
    assert gib(1.5 * 2**30) == "1.50 GiB"


def test_a_run_records_its_peak_memory_in_summary_and_log(tiny_llama_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"question": f"What is {i} + 1?", "answer": str(i + 1)}) + "\n"
                            for i in range(2)), encoding="utf-8")
    model = rv.load_model(f"hf:{tiny_llama_dir}")
    summary = rv.evaluate(rv.EvalConfig(data=rv.DataSpec("jsonl", str(path)),
                                        generation=GenerationOptions(max_new_tokens=4)), model,
                          tmp_path / "eval")
    stored = json.loads((tmp_path / "eval" / "summary.json").read_text(encoding="utf-8"))
    assert stored["peak_memory"] == summary["peak_memory"]
    # At least the model's weights and torch were resident; at most what the kernel says this process peaked at.
    assert 50 << 20 < stored["peak_memory"]["rss_bytes"] <= peak_memory()["rss_bytes"]
    log = (tmp_path / "eval" / "run.log").read_text(encoding="utf-8")
    assert f"{describe(stored['peak_memory'])} (this process so far)" in log
