"""What every part of the GPU bench shares: the backends it builds (timing their warm-up), its data, the bench-only
answer forcing, utilisation and memory sampling, the JSON of figures, and the timing and formatting helpers."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import torch

from robusteval.models.hf import HFBackend

from .model import sync

GSM8K_TEST_SIZE = 1319

#: --decoder for every backend the bench builds (set by main): auto is the static cache on cuda.
DECODER = {"decoder": "auto"}
#: Seconds each backend's load-time warm-up (compile, capture, self-check) took, by (decoder, batch size).
WARM_UPS: dict[str, float] = {}


def make_backend(model: Any, tokenizer: Any, name: str, batch_size: int, decoder: str | None = None) -> HFBackend:
    """The hf backend as ``load_model`` builds it, warm-up included (on cuda: the static decode step compiled and
    captured, then checked against the dynamic cache), timed apart in :data:`WARM_UPS`."""
    decoder = decoder or DECODER["decoder"]
    backend = HFBackend(model, tokenizer, name, batch_size=batch_size, use_prefix_cache=True, decoder=decoder)
    began = time.perf_counter()
    backend.warm_up()
    WARM_UPS.setdefault(f"{backend.decoder}-b{batch_size}", time.perf_counter() - began)
    backend.eos_ids = set()  # BENCH ONLY: never stop at a random model's end-of-sequence token
    return backend


# ---------------------------------------------------------------------------------------------- data
def write_examples(args: argparse.Namespace, n: int, path: Path) -> Path:
    """``n`` GSM8K-format records (ids gsm8k-0..n-1 when loaded) cycled from --data or the package sample."""
    source = Path(args.data) if args.data else Path(str(resources.files("robusteval.data") / "samples" / "math.jsonl"))
    rows = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            answer = str(record["answer"])
            rows.append({"question": record["question"],
                         "answer": answer if "#### " in answer else f"#### {answer.strip()}"})
    if not rows:
        raise SystemExit(f"{source}: no records")
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps(rows[i % len(rows)]) + "\n")
    return path


@contextlib.contextmanager
def forced_answers(answer_tokens: int) -> Iterator[None]:
    """BENCH ONLY. A random model never writes "The answer is N.", so MATCHA would attack nothing. Inside this
    context the clean grading of the MATCHA runner counts every example as answered correctly (the verdict of
    the gold answer sentence) and the answer sentence as the first ``answer_tokens`` generated tokens, the rest
    being the chain of thought: every example is attacked in full. Never use outside a benchmark."""
    from robusteval.attacks.matcha import run as matcha_run

    real_grade, real_count = matcha_run.grade_completion, matcha_run.answer_token_count

    def grade(example: Any, completion: str, **kwargs: Any) -> dict[str, Any]:
        graded = real_grade(example, f"The answer is {example.answer}.", **kwargs)
        return {**graded, "answer_sentence": completion[:40], "cot": completion[40:]}

    def count(backend: Any, continuation_ids: Any, answer_sentence: str) -> int:
        return min(answer_tokens, max(len(continuation_ids) - 1, 0))

    matcha_run.grade_completion, matcha_run.answer_token_count = grade, count
    try:
        yield
    finally:
        matcha_run.grade_completion, matcha_run.answer_token_count = real_grade, real_count


@contextlib.contextmanager
def forced_semantic_verdicts() -> Iterator[None]:
    """BENCH ONLY. A random model's semantic verdicts are noise (a random Llama prefers "0" for every question,
    so every perturbation would be redrawn and then skipped). Inside this context an LLM judge of the semantic
    task does all its model work (scoring or generation) and its verdict is then read as "same meaning": the
    judge's cost is measured on a full attack. Never use outside a benchmark."""
    from robusteval.judges.llm import BinaryLLMJudge

    real_judge = BinaryLLMJudge.judge

    def judge(self: Any, items: Any) -> Any:
        verdicts = real_judge(self, items)
        if self.task != "semantic":
            return verdicts
        return [dataclasses.replace(v, label=True, detail={**v.detail, "bench_forced": True}) for v in verdicts]

    BinaryLLMJudge.judge = judge  # type: ignore[method-assign]
    try:
        yield
    finally:
        BinaryLLMJudge.judge = real_judge  # type: ignore[method-assign]


# ---------------------------------------------------------------------------------------------- GPU utilisation
class GpuUtilisation:
    """Mean GPU utilisation (%) while the context is open: pynvml when importable, else a background
    ``nvidia-smi --query-gpu=utilization.gpu -lms 500``; ``mean`` is None on CPU or without either.
    ``cpu_percent``: this process's CPU seconds over wall seconds times torch's threads, on any device (the
    CPU rehearsal's stand-in for the GPU figure)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.samples: list[float] = []
        self.source: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._began = (0.0, 0.0)
        self.cpu_percent: float | None = None

    def _index(self) -> int:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        return int(ids[index]) if ids and index < len(ids) and ids[index].isdigit() else index

    def __enter__(self) -> GpuUtilisation:
        self._began = (time.perf_counter(), time.process_time())
        if self.device.type != "cuda":
            return self
        index = self._index()
        try:
            import pynvml  # type: ignore[import-not-found]

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            self.source = "pynvml"

            def poll() -> None:
                while not self._stop.wait(0.25):
                    self.samples.append(float(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu))

        except Exception:
            smi = shutil.which("nvidia-smi")
            if smi is None:
                return self
            self._proc = subprocess.Popen([smi, "-i", str(index), "--query-gpu=utilization.gpu",
                                           "--format=csv,noheader,nounits", "-lms", "500"],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.source = "nvidia-smi"
            proc = self._proc

            def poll() -> None:
                assert proc.stdout is not None
                for line in proc.stdout:
                    with contextlib.suppress(ValueError):
                        self.samples.append(float(line.strip()))

        self._thread = threading.Thread(target=poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        wall, cpu = time.perf_counter() - self._began[0], time.process_time() - self._began[1]
        self.cpu_percent = 100.0 * cpu / (wall * torch.get_num_threads()) if wall > 0 else None
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=5)
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.samples) if self.samples else None


# ---------------------------------------------------------------------------------------------- results
class Results:
    """Every figure, rewritten to ``path`` after each measurement."""

    def __init__(self, path: Path, data: dict[str, Any]):
        self.path = path
        self.data = data
        self._lock = threading.Lock()  # the proof's time guard may save from its own thread
        self.save()

    def save(self) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(self.path.name + ".partial")
            tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory(device: torch.device) -> dict[str, Any]:
    """Peak memory since :func:`reset_peak_memory`: the CUDA allocator's on cuda, else this process's peak resident
    set (since it started: the OS keeps no resettable peak)."""
    if device.type == "cuda":
        return {"allocated_bytes": torch.cuda.max_memory_allocated(device),
                "reserved_bytes": torch.cuda.max_memory_reserved(device), "source": "torch.cuda (since reset)"}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {"allocated_bytes": rss, "reserved_bytes": rss, "source": "process peak RSS (since start)"}


def timed(device: torch.device, fn: Callable[[], Any]) -> tuple[float, Any]:
    sync(device)
    began = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - began, out


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b is not None and b > 0 else None


def fmt(value: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if value is None else f"{value:{spec}}{unit}"
