"""The bench's printed report: the figures as tables, and the targets of issue 19 as ratios from the same run."""

from __future__ import annotations

from typing import Any

from .common import fmt, ratio

TARGETS = {
    "decode_vs_generate_b1": 1.3,  # robusteval decode ms/step <= 1.3x compiled static generate, batch 1
    "decode_vs_floor_b1": 2.5,  # <= 2.5x the bandwidth floor, batch 1
    "gpu_util_token_attack": 70.0,  # mean GPU utilisation (%) during a token attack at the default batch
    "attack_speedup": 6.0,  # s/attacked example at batch 1 / at the default batch >= 6
    "gsm8k_gpu_hours": 1.0,  # full GSM8K token attack, 8B shape, extrapolated from >= 64 examples
    "eval_first_batch_extra_s": 2.0,  # first eval batch at most 2 s slower than the median of the next ones
}


def targets(data: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """(target, figure, ratio or value against the target, met) from the same run's figures."""
    rows: list[tuple[str, str, str, bool | None]] = []
    b1 = data.get("decode", {}).get("rows", {}).get("1")
    if b1:
        ours, gen = b1["robusteval"]["ms_per_step"], b1["generate_static"].get("ms_per_step")
        r = ratio(ours, gen)
        rows.append(("decode b1 <= 1.3x compiled static generate", f"{ours:.2f} vs {fmt(gen)} ms/step",
                     fmt(r, ".2f", "x"), None if r is None else r <= TARGETS["decode_vs_generate_b1"]))
        floor = data.get("floor", {}).get("floor_ms_per_step")
        r = ratio(ours, floor)
        rows.append(("decode b1 <= 2.5x bandwidth floor", f"{ours:.2f} vs {fmt(floor)} ms/step",
                     fmt(r, ".2f", "x"), None if r is None else r <= TARGETS["decode_vs_floor_b1"]))
    attack = data.get("attack", {}).get("runs", {})
    default = data.get("config", {}).get("batch_size", 8)
    tok_b = attack.get(f"token-b{default}")
    if tok_b:
        util = tok_b["gpu_util_mean"]
        rows.append(("GPU util, token attack at default batch >= 70%", fmt(util, ".0f", "%"), fmt(util, ".0f", "%"),
                     None if util is None else util >= TARGETS["gpu_util_token_attack"]))
    for level in ("token", "embedding"):
        a1, ab = attack.get(f"{level}-b1"), attack.get(f"{level}-b{default}")
        if a1 and ab and default != 1:
            r = ratio(a1["s_per_attacked"], ab["s_per_attacked"])
            rows.append((f"{level}: s/attacked at b{default} <= 1/6 of b1",
                         f"{fmt(a1['s_per_attacked'])} vs {fmt(ab['s_per_attacked'])} s", f"speed-up {fmt(r, '.2f', 'x')}",
                         None if r is None else r >= TARGETS["attack_speedup"]))
    if tok_b:
        hours = tok_b["gsm8k_gpu_hours"]
        valid = not data.get("config", {}).get("tiny") and tok_b["attacked"] >= 64 and data.get("device") == "cuda"
        rows.append(("full GSM8K token attack < 1 GPU-hour (8B, >= 64 ex.)",
                     f"{fmt(hours, '.3f')} h from {tok_b['attacked']} ex.", fmt(hours, ".3f", " h"),
                     (hours < TARGETS["gsm8k_gpu_hours"]) if valid and hours is not None else None))
    ev = data.get("eval")
    if ev and ev.get("first_extra_s") is not None:
        extra = ev["first_extra_s"]
        rows.append(("first eval batch <= 2 s slower than the next", f"{ev['first_s']:.2f} vs {ev['median_next_s']:.2f} s",
                     f"+{extra:.2f} s", extra <= TARGETS["eval_first_batch_extra_s"]))
    return rows


def report(data: dict[str, Any]) -> None:
    print()
    print(f"== GPU benchmark: {data['model']['description']} on {data['floor']['device_name']} ({data['device']})")
    dec = data.get("decode")
    if dec:
        print(f"\ndecode, {dec['prompt_tokens']}-token prompt, {dec['new_tokens']} new tokens (ms/step)")
        print(f"{'batch':>5} {'robusteval':>11} {'generate':>9} {'ratio':>7}  generate")
        for key, row in dec["rows"].items():
            gen = row["generate_static"]
            how = "error" if "error" in gen else ("static, compiled" if gen.get("compiled") else "static, eager")
            dynamic = row.get("robusteval_dynamic", {}).get("ms_per_step")
            print(f"{key:>5} {row['robusteval']['ms_per_step']:>11.2f} {fmt(gen.get('ms_per_step')):>9} "
                  f"{fmt(row['ratio_vs_generate'], '.2f', 'x'):>7}  {how}; robusteval's decoder: "
                  f"{row['robusteval'].get('decoder')}" + (f" (dynamic cache: {dynamic:.2f})" if dynamic else ""))
    if data.get("warm_up_s"):
        print("load-time warm-up (compile, capture, self-check) by decoder and batch: " + ", ".join(
            f"{k} {v:.1f} s" for k, v in data["warm_up_s"].items()))
    fl = data["floor"]
    print(f"\nfloor: {fl['param_bytes'] / 1e9:.3f} GB of parameters / "
          f"{fmt(fl['bandwidth_Bps'] and fl['bandwidth_Bps'] / 1e12, '.2f', ' TB/s')} = "
          f"{fmt(fl['floor_ms_per_step'], '.2f', ' ms/step')} (bandwidth: {fl['bandwidth_source'] or 'n/a'})")
    att = data.get("attack")
    if att and att["runs"]:
        print(f"\nMATCHA (steps {data['config']['steps']}, insert 0.2, top-k 0.25, 1 candidate, eps 0.005, "
              f"{data['config']['max_new_tokens']} new tokens, judge arith, semantic none; answers forced)")
        print(f"{'run':<14} {'attacked':>8} {'clean s/ex':>10} {'attack s/ex':>11} {'GPU util':>8} {'GSM8K GPU-h':>11}")
        for name, r in att["runs"].items():
            print(f"{name:<14} {r['attacked']:>4}/{r['examples']:<3} {r['s_per_example_clean']:>10.3f} "
                  f"{fmt(r['s_per_attacked'], '.3f'):>11} {fmt(r['gpu_util_mean'], '.0f', '%'):>8} "
                  f"{fmt(r['gsm8k_gpu_hours'], '.3f'):>11}")
        for level, ag in att["agreement"].items():
            print(f"agreement {level} b{ag['batches'][0]} vs b{ag['batches'][1]}: {ag['identical']}/{ag['compared']} "
                  f"identical (perturbed ids, perturbed completion, outcome); clean completions identical "
                  f"{ag['clean_identical']}/{ag['compared']}")
    ev = data.get("eval")
    if ev:
        print(f"\neval ({ev['examples']} questions, batch 8): first batch {fmt(ev['first_s'])} s, median of the next "
              f"{fmt(ev['median_next_s'])} s, total {ev['total_s']:.2f} s")
    rows = targets(data)
    data["targets"] = [{"target": t, "figure": f, "value": v, "met": m} for t, f, v, m in rows]
    if rows:
        print(f"\n{'target':<55} {'figure':<30} {'value':>14}  met")
        for t, f, v, m in rows:
            print(f"{t:<55} {f:<30} {v:>14}  {'n/a' if m is None else 'yes' if m else 'NO'}")

