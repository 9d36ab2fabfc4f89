"""Decode speed: ms/step of robusteval's decoder and of transformers' compiled static-cache ``generate`` from the
same prompt, against the floor (parameter bytes over memory bandwidth, from a table and measured)."""

from __future__ import annotations

import argparse
import platform
import time
from typing import Any

import torch

from robusteval.models.hf import HFBackend

from .common import Results, make_backend, ratio, timed
from .model import BANDWIDTHS, sync


def decode_prompt(backend: HFBackend, batch: int, prompt_tokens: int) -> tuple[list[int], list[list[int]]]:
    """A shared prefix and ``batch`` distinct suffixes, together ``prompt_tokens`` each (BOS included), from
    real text (the exemplars and the sample questions)."""
    from robusteval.prompts.answer_first import AnswerFirstPrompt, load_exemplars

    text = AnswerFirstPrompt(load_exemplars("math")).prefix
    ids = backend.encode(text)
    suffix_len = min(40, prompt_tokens // 4)
    need = prompt_tokens + batch * suffix_len
    while len(ids) < need:
        ids = ids + ids
    prefix = backend.bos_ids + ids[: prompt_tokens - suffix_len - len(backend.bos_ids)]
    start = len(prefix)
    suffixes = [ids[start + r * suffix_len : start + (r + 1) * suffix_len] for r in range(batch)]
    return prefix, suffixes


def per_step(t_full: float, t_half: float, steps_full: int, steps_half: int) -> float:
    """Seconds per decode step: the difference of two runs from the same prompt (N and N/2 new tokens), so the
    prefill and any per-call overhead cancel."""
    if steps_full > steps_half and t_full > t_half:
        return (t_full - t_half) / (steps_full - steps_half)
    return t_full / max(steps_full, 1)  # timing noise larger than the difference (tiny models): the plain mean


def measure_decode_many(backend: HFBackend, prefix: list[int], suffixes: list[list[int]], new: int,
                        device: torch.device) -> dict[str, Any]:
    """ms/step of ``backend.decode_many`` over N and N/2 new tokens, after a short warm-up (which also encodes
    the prefix into its cache)."""
    def run(limit: int) -> Any:
        return backend.decode_many(prefix, suffixes, max_new_tokens=limit)

    half = max(new // 2, 1)
    run(min(8, new))
    tn, rows = timed(device, lambda: run(new))
    th, rows_half = timed(device, lambda: run(half))
    steps, steps_half = max(len(r.token_ids) for r in rows), max(len(r.token_ids) for r in rows_half)
    per = per_step(tn, th, steps, steps_half)
    return {"total_s": tn, "half_s": th, "steps": steps, "ms_per_step": per * 1000,
            "prefill_s": th - per * steps_half, "decoder": backend.decoder}


def measure_generate(model: Any, tokenizer: Any, prefix: list[int], suffixes: list[list[int]], new: int,
                     compile_on: bool, device: torch.device) -> dict[str, Any]:
    """ms/step of ``model.generate(cache_implementation="static")`` (torch.compile'd by transformers when
    ``compile_on``) over the whole prompt; the first call (compile, timed as ``warmup_s``) is not counted.
    An error is reported in the figures, not raised: the other figures stand."""
    ids = torch.tensor([prefix + s for s in suffixes], device=device)
    mask = torch.ones_like(ids)

    def generate(limit: int) -> Any:
        with torch.no_grad():
            return model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=limit, do_sample=False,
                                  cache_implementation="static", disable_compile=not compile_on,
                                  pad_token_id=tokenizer.pad_token_id)

    try:
        began = time.perf_counter()
        generate(new)  # warm-up: compiles the decode step for this batch size (static cache of N tokens)
        sync(device)
        warm = time.perf_counter() - began
        tn, seqs = timed(device, lambda: generate(new))
        th, seqs_half = timed(device, lambda: generate(max(new // 2, 1)))  # reuses the larger static cache
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    steps, steps_half = seqs.shape[1] - ids.shape[1], seqs_half.shape[1] - ids.shape[1]
    per = per_step(tn, th, steps, steps_half)
    return {"warmup_s": warm, "total_s": tn, "half_s": th, "steps": steps, "ms_per_step": per * 1000,
            "prefill_s": th - per * steps_half, "compiled": hasattr(model, "_compiled_call")}


def run_decode(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, results: Results) -> None:
    out = results.data.setdefault("decode", {"rows": {}})
    new = args.max_new_tokens
    compile_on = args.compile if args.compile is not None else device.type == "cuda"
    out.update({"prompt_tokens": args.prompt_tokens, "new_tokens": new, "compile": compile_on,
                "method": "ms/step = (time for N new tokens - time for N/2) / (N - N/2), after a warm-up; "
                          "robusteval: the prefix is cached, its suffix prefilled; generate: the whole prompt"})
    for batch in args.decode_batches:
        backend = make_backend(model, tokenizer, f"random:{args.shape}", batch)
        prefix, suffixes = decode_prompt(backend, batch, args.prompt_tokens)
        row: dict[str, Any] = {"batch": batch, "robusteval": measure_decode_many(backend, prefix, suffixes, new,
                                                                                 device)}
        print(f"decode batch {batch:>3}: robusteval decode_many ({backend.decoder} cache) "
              f"{row['robusteval']['ms_per_step']:.2f} ms/step ({row['robusteval']['steps']} steps, "
              f"{row['robusteval']['total_s']:.2f} s)", flush=True)
        if backend.decoder == "static":  # the dynamic cache beside it: what the static path gains
            dynamic = make_backend(model, tokenizer, f"random:{args.shape}", batch, decoder="dynamic")
            row["robusteval_dynamic"] = measure_decode_many(dynamic, prefix, suffixes, new, device)
            print(f"decode batch {batch:>3}: robusteval decode_many (dynamic cache) "
                  f"{row['robusteval_dynamic']['ms_per_step']:.2f} ms/step", flush=True)
            del dynamic
        row["generate_static"] = generate_row(model, tokenizer, prefix, suffixes, new, compile_on, device, batch)
        row["ratio_vs_generate"] = ratio(row["robusteval"]["ms_per_step"],
                                         row["generate_static"].get("ms_per_step"))
        out["rows"][str(batch)] = row
        results.save()
        del backend
        if device.type == "cuda":
            torch.cuda.empty_cache()


def generate_row(model: Any, tokenizer: Any, prefix: list[int], suffixes: list[list[int]], new: int,
                 compile_on: bool, device: torch.device, batch: int) -> dict[str, Any]:
    """:func:`measure_generate`, printed."""
    gen = measure_generate(model, tokenizer, prefix, suffixes, new, compile_on, device)
    if "error" in gen:
        print(f"decode batch {batch:>3}: generate(static) failed: {gen['error']}", flush=True)
    else:
        print(f"decode batch {batch:>3}: generate(static{', compiled' if gen['compiled'] else ''}) "
              f"{gen['ms_per_step']:.2f} ms/step (warm-up {gen['warmup_s']:.1f} s)", flush=True)
    return gen


def measured_bandwidth(device: torch.device, megabytes: int = 1024, repeats: int = 10) -> float:
    """Bytes/s of a device-to-device copy (bytes read plus bytes written), the median of ``repeats`` copies."""
    n = megabytes * 2**20 // 4
    src = torch.randn(n, device=device)  # random data, not zeros (a copy of zeros can run faster)
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = sorted(timed(device, lambda: dst.copy_(src))[0] for _ in range(repeats))
    return 2 * n * 4 / times[len(times) // 2]


def floor_figures(args: argparse.Namespace, model: Any, device: torch.device, *, measure: bool = False,
                  copy_megabytes: int = 1024) -> dict[str, Any]:
    """Parameter bytes over the memory bandwidth (``--bandwidth``, else the table by device name; with
    ``measure``, also over a measured copy bandwidth): the least time one decode step can take."""
    param_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    bandwidth, source = args.bandwidth, "--bandwidth" if args.bandwidth else None
    if bandwidth is None and device.type == "cuda":
        for key, value in BANDWIDTHS:
            if key.lower() in name.lower():
                bandwidth, source = value, f"table ({key})"
                break
    floor_ms = param_bytes / bandwidth * 1000 if bandwidth else None
    figures = {"device_name": name, "param_bytes": param_bytes, "bandwidth_Bps": bandwidth,
               "bandwidth_source": source, "floor_ms_per_step": floor_ms}
    if measure:
        copied = measured_bandwidth(device, copy_megabytes)
        figures.update({"measured_bandwidth_Bps": copied, "copy_megabytes": copy_megabytes,
                        "measured_floor_ms_per_step": param_bytes / copied * 1000})
    return figures
