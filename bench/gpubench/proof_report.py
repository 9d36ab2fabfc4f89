"""Issue 29's proof, read back: the flat figures, the targets met or missed, and a markdown block for
bench/RESULTS.md, all from the JSON the proof writes (standard library only, so that the shell script can render
what a killed run left).

    python bench/gpubench/proof_report.py OUT/gpu_proof.json      # prints the block, writes OUT/gpu_proof.md
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

GIB = 2**30

#: Issue 29's targets (one H100; ratios from one run).
TARGETS = {
    "decode_vs_generate_b1": 1.3,
    "decode_vs_floor_b1": 2.5,
    "utilisation_pct_default": 70.0,
    "attack_speedup": 6.0,
    "gsm8k_hours": 1.0,
    "gsm8k_min_examples": 32,
    "first_batch_extra_s": 2.0,
    "compile_s": 90.0,
}

#: The last GPU figures (H100, random Llama-3-8B shape, bf16), before the batched attacks and the static decoder.
BEFORE = {
    "decode_ms_b1": 37.1, "generate_ms_b1": 10.5, "floor_ms": 4.8, "utilisation_pct": 14.0,
    "s_per_attacked": 14.75, "gsm8k_hours": 6.0,
}

#: Every figure the proof must produce (the rehearsal test checks each is present and finite).
FIGURES = (
    "decode_ms_robusteval_b1", "decode_ms_generate_b1", "decode_ms_robusteval_default", "decode_ms_generate_default",
    "floor_ms", "floor_ms_measured", "decode_vs_generate_b1", "decode_vs_floor_b1",
    "compile_s_robusteval_b1", "compile_s_robusteval_default", "compile_s_generate_b1",
    "compile_s_generate_default", "compile_s_max",
    "attack_examples_default", "attack_examples_b1", "s_per_attacked_default", "s_per_attacked_b1",
    "attack_speedup", "utilisation_pct_default", "peak_memory_gib", "static_cache_gib",
    "agreement_fraction", "agreement_compared", "gsm8k_hours",
    "first_batch_s", "next_batches_median_s", "first_batch_extra_s",
    "attack_first_chunk_s", "attack_next_chunks_median_s",
)


def _get(data: dict[str, Any], *path: str) -> Any:
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def _div(a: Any, b: Any) -> float | None:
    return a / b if isinstance(a, int | float) and isinstance(b, int | float) and b > 0 else None


def figures(data: dict[str, Any]) -> dict[str, Any]:
    """The flat figures of a proof JSON; None where the run did not get that far (or the figure failed)."""
    default = _get(data, "config", "batch_size") or 8
    rows = _get(data, "decode", "rows") or {}
    runs = _get(data, "attack", "runs") or {}
    run_b1, run_default = runs.get("token-b1") or {}, runs.get(f"token-b{default}") or {}
    fig: dict[str, Any] = {
        "decode_ms_robusteval_b1": _get(rows, "1", "robusteval", "ms_per_step"),
        "decode_ms_generate_b1": _get(rows, "1", "generate_static", "ms_per_step"),
        "decode_ms_robusteval_default": _get(rows, str(default), "robusteval", "ms_per_step"),
        "decode_ms_generate_default": _get(rows, str(default), "generate_static", "ms_per_step"),
        "floor_ms_measured": _get(data, "floor", "measured_floor_ms_per_step"),
    }
    table_floor = _get(data, "floor", "floor_ms_per_step")
    fig["floor_ms"] = table_floor if table_floor is not None else fig["floor_ms_measured"]
    fig["floor_source"] = _get(data, "floor", "bandwidth_source") if table_floor is not None else "measured copy"
    fig["decode_vs_generate_b1"] = _div(fig["decode_ms_robusteval_b1"], fig["decode_ms_generate_b1"])
    fig["decode_vs_floor_b1"] = _div(fig["decode_ms_robusteval_b1"], fig["floor_ms"])
    compile_s = data.get("compile_s") or {}
    for key, name in (("robusteval_b1", "robusteval-b1"), ("robusteval_default", f"robusteval-b{default}"),
                      ("generate_b1", "generate-b1"), ("generate_default", f"generate-b{default}")):
        fig[f"compile_s_{key}"] = compile_s.get(name)
    known = [v for v in compile_s.values() if isinstance(v, int | float)]
    fig["compile_s_max"] = max(known) if known else None
    fig["attack_examples_default"] = run_default.get("attacked")
    fig["attack_examples_b1"] = run_b1.get("attacked")
    fig["s_per_attacked_default"] = run_default.get("s_per_attacked")
    fig["s_per_attacked_b1"] = run_b1.get("s_per_attacked")
    fig["attack_speedup"] = _div(fig["s_per_attacked_b1"], fig["s_per_attacked_default"])
    util = run_default.get("gpu_util_mean")
    fig["utilisation_source"] = run_default.get("gpu_util_source") if util is not None else "process CPU"
    fig["utilisation_pct_default"] = util if util is not None else run_default.get("cpu_percent")
    peak = _get(data, "peak_memory", "allocated_bytes")
    fig["peak_memory_gib"] = peak / GIB if isinstance(peak, int | float) else None
    caches = data.get("static_caches") or {}
    sizes = [c.get("bytes") for c in caches.values() if isinstance(c.get("bytes"), int | float)]
    fig["static_cache_gib"] = sum(sizes) / GIB if sizes else None
    agree = _get(data, "attack", "agreement", "token") or {}
    fig["agreement_fraction"] = agree.get("fraction")
    fig["agreement_compared"] = agree.get("compared")
    fig["gsm8k_hours"] = run_default.get("gsm8k_gpu_hours")
    first = data.get("first_batch") or {}
    fig["first_batch_s"] = first.get("first_s")
    fig["next_batches_median_s"] = first.get("median_next_s")
    fig["first_batch_extra_s"] = first.get("first_extra_s")
    chunks = run_default.get("chunks_s") or []
    fig["attack_first_chunk_s"] = chunks[0] if chunks else None
    fig["attack_next_chunks_median_s"] = statistics.median(chunks[1:]) if len(chunks) > 1 else None
    return fig


def incomplete(fig: dict[str, Any]) -> list[str]:
    """The names of :data:`FIGURES` that are missing or not finite numbers."""
    return [name for name in FIGURES
            if not (isinstance(fig.get(name), int | float) and math.isfinite(fig[name]))]


def _fmt(value: Any, spec: str = ".2f", unit: str = "") -> str:
    return "n/a" if not isinstance(value, int | float) else f"{value:{spec}}{unit}"


def _met(ok: bool | None) -> str:
    return "n/a" if ok is None else "yes" if ok else "**no**"


def target_rows(fig: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(target, this run, met, before) for each of issue 29's targets."""
    def at_most(value: Any, limit: float) -> bool | None:
        return None if not isinstance(value, int | float) else value <= limit

    hours_ok = at_most(fig["gsm8k_hours"], TARGETS["gsm8k_hours"])
    if hours_ok is not None and (fig["attack_examples_default"] or 0) < TARGETS["gsm8k_min_examples"]:
        hours_ok = None  # extrapolated from too few examples to count
    speedup = fig["attack_speedup"]
    util = fig["utilisation_pct_default"]
    return [
        ("decode b1 <= 1.3x compiled static-cache generate",
         f"{_fmt(fig['decode_ms_robusteval_b1'])} vs {_fmt(fig['decode_ms_generate_b1'])} ms/step = "
         f"{_fmt(fig['decode_vs_generate_b1'], '.2f', 'x')}", _met(at_most(fig["decode_vs_generate_b1"], 1.3)),
         f"{BEFORE['decode_ms_b1']} vs {BEFORE['generate_ms_b1']} = 3.53x"),
        ("decode b1 <= 2.5x the floor",
         f"{_fmt(fig['decode_ms_robusteval_b1'])} vs {_fmt(fig['floor_ms'])} ms ({fig['floor_source']}) = "
         f"{_fmt(fig['decode_vs_floor_b1'], '.2f', 'x')}", _met(at_most(fig["decode_vs_floor_b1"], 2.5)),
         f"{BEFORE['decode_ms_b1']} vs {BEFORE['floor_ms']} = 7.7x"),
        ("mean utilisation, token attack at the default batch >= 70%",
         f"{_fmt(util, '.0f', '%')} ({fig['utilisation_source']})",
         _met(None if not isinstance(util, int | float) else util >= 70.0), f"{BEFORE['utilisation_pct']:.0f}%"),
        ("s/attacked at the default batch <= 1/6 of batch 1",
         f"{_fmt(fig['s_per_attacked_b1'])} vs {_fmt(fig['s_per_attacked_default'])} s = "
         f"{_fmt(speedup, '.2f', 'x')} faster",
         _met(None if not isinstance(speedup, int | float) else speedup >= 6.0), f"{BEFORE['s_per_attacked']} s (b1)"),
        ("GSM8K token attack < 1 GPU-hour (from >= 32 examples)",
         f"{_fmt(fig['gsm8k_hours'], '.2f', ' h')} from {_fmt(fig['attack_examples_default'], 'd')} examples", _met(hours_ok),
         f"about {BEFORE['gsm8k_hours']:.0f} h"),
        ("first batch <= 2 s slower than the next ones",
         f"{_fmt(fig['first_batch_s'])} vs {_fmt(fig['next_batches_median_s'])} s "
         f"({_fmt(fig['first_batch_extra_s'], '+.2f')} s)", _met(at_most(fig["first_batch_extra_s"], 2.0)), "n/a"),
        ("compile < 90 s", f"{_fmt(fig['compile_s_max'], '.1f', ' s')} (the longest)",
         _met(at_most(fig["compile_s_max"], 90.0)), "n/a"),
    ]


def markdown(data: dict[str, Any]) -> str:
    """The block to paste into bench/RESULTS.md."""
    fig = figures(data)
    env, model = data.get("environment") or {}, data.get("model") or {}
    default = _get(data, "config", "batch_size") or 8
    title = "CPU rehearsal (not a GPU figure)" if data.get("rehearsal") else "GPU proof"
    if _get(data, "config", "extras_only"):
        title += ", extras only"
    lines = [
        f"### {title}: {model.get('description', '?')} on {_get(data, 'floor', 'device_name') or data.get('device')}",
        "",
        f"`bash bench/gpu_proof.sh{' --cpu-rehearsal' if data.get('rehearsal') else ''}`, {data.get('started_utc', '?')}, "
        f"commit {data.get('commit', '?')}; torch {env.get('torch')}, transformers {env.get('transformers')}, "
        f"CUDA {env.get('cuda')}; wall {_fmt(data.get('wall_s'), '.0f', ' s')}"
        + (f"; **time guard: {data['time_guard']}**" if data.get("time_guard") else ""),
        "",
        "| target (issue 29) | this run | met | before (H100, issue 29) |",
        "|---|---|---|---|",
        *[f"| {t} | {v} | {m} | {b} |" for t, v, m, b in target_rows(fig)],
        "",
        f"| figure | batch 1 | batch {default} |",
        "|---|---|---|",
        f"| decode ms/step, robusteval ({_get(data, 'decode', 'rows', '1', 'robusteval', 'decoder') or '?'}) | "
        f"{_fmt(fig['decode_ms_robusteval_b1'])} | {_fmt(fig['decode_ms_robusteval_default'])} |",
        f"| decode ms/step, generate (static cache, compiled: "
        f"{_get(data, 'decode', 'rows', '1', 'generate_static', 'compiled')}) | {_fmt(fig['decode_ms_generate_b1'])} | "
        f"{_fmt(fig['decode_ms_generate_default'])} |",
        f"| compile s, robusteval warm-up | {_fmt(fig['compile_s_robusteval_b1'], '.1f')} | "
        f"{_fmt(fig['compile_s_robusteval_default'], '.1f')} |",
        f"| compile s, generate warm-up | {_fmt(fig['compile_s_generate_b1'], '.1f')} | "
        f"{_fmt(fig['compile_s_generate_default'], '.1f')} |",
        f"| token attack: examples attacked | {_fmt(fig['attack_examples_b1'], 'd')} | "
        f"{_fmt(fig['attack_examples_default'], 'd')} |",
        f"| token attack: s per attacked example | {_fmt(fig['s_per_attacked_b1'], '.3f')} | "
        f"{_fmt(fig['s_per_attacked_default'], '.3f')} |",
        "",
        f"Floor {_fmt(fig['floor_ms'])} ms/step ({fig['floor_source']}"
        + (f"; a measured copy gives {_fmt(fig['floor_ms_measured'])}" if fig["floor_source"] != "measured copy" else "")
        + f"). Peak memory {_fmt(fig['peak_memory_gib'], '.1f', ' GiB')}, static "
        f"caches {_fmt(fig['static_cache_gib'], '.3f', ' GiB')}. Batch 1 vs batch {default} agreement "
        f"(perturbed ids, completion, outcome): {_fmt(fig['agreement_fraction'], '.2f')} of "
        f"{_fmt(fig['agreement_compared'], 'd')} examples. Attack chunks of one batch: first {_fmt(fig['attack_first_chunk_s'])} s, "
        f"median of the next {_fmt(fig['attack_next_chunks_median_s'])} s.",
    ]
    for key, cache in (data.get("static_caches") or {}).items():
        lines.append(f"Static decoder of the {key} backend: {cache.get('decoder')}, compile mode "
                     f"{cache.get('compile_mode')}, buckets (rows, slots) {cache.get('buckets')}, "
                     f"{cache.get('steps')} compiled steps" + (f", self-check relative error {cache['check_error']:.3g}"
                                                                if cache.get("check_error") is not None else "")
                     + (f", FAILED: {cache['failed']}" if cache.get("failed") else "")
                     + ".")
    extras = _get(data, "attack", "runs") or {}
    for name, run in extras.items():
        if name not in ("token-b1", f"token-b{default}"):
            lines.append(f"Extra run {name} (semantic judge {run.get('semantic_judge')}): {run.get('attacked')} of "
                         f"{run.get('examples')} attacked ({run.get('skipped')} skipped), "
                         f"{_fmt(run.get('s_per_attacked'), '.3f')} s/attacked, utilisation "
                         f"{_fmt(run.get('gpu_util_mean'), '.0f', '%')}, GSM8K "
                         f"{_fmt(run.get('gsm8k_gpu_hours'), '.2f', ' h')}.")
    stages = data.get("stages") or []
    not_ok = [s for s in stages if s.get("status") != "ok"]
    if not_ok:
        lines += ["", "Stages not done: " + "; ".join(f"{s['name']} ({s['status']}: {s.get('detail', '')})"
                                                      for s in not_ok) + "."]
    missing = incomplete(fig)
    lines += ["", f"Figures complete: {'yes' if not missing else 'no, missing ' + ', '.join(missing)}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: proof_report.py OUT/gpu_proof.json", file=sys.stderr)
        return 2
    path = Path(args[0])
    if not path.is_file():
        print(f"{path}: no proof figures were written", file=sys.stderr)
        return 1
    block = markdown(json.loads(path.read_text(encoding="utf-8")))
    path.with_suffix(".md").write_text(block, encoding="utf-8")
    print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
