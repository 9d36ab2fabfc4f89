"""MATCHA attack throughput and the eval's first batch, through the public API (``rv.attack_matcha``,
``rv.evaluate``) on the bench's backends, answers forced (see :func:`.common.forced_answers`)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
from pathlib import Path
from typing import Any

import torch

import robusteval as rv
from robusteval.models.hf import HFBackend

from .common import (
    GSM8K_TEST_SIZE,
    GpuUtilisation,
    Results,
    fmt,
    forced_answers,
    forced_semantic_verdicts,
    make_backend,
    peak_memory,
    reset_peak_memory,
    timed,
    write_examples,
)
from .model import sync


def matcha_config(args: argparse.Namespace, level: str, n: int, data_file: Path,
                  semantic_judge: str = "none") -> rv.MatchaRunConfig:
    """Paper settings: insert 0.2, 1 candidate, ``args.steps`` steps; topk_ratio 0.25 and epsilon 0.005 are
    the paper's GSM8K defaults (MatchaConfig.for_dataset). ``attack_limit=0``: the clean pass alone."""
    return rv.MatchaRunConfig(
        data=rv.DataSpec("gsm8k", str(data_file), limit=n), level=level,
        judging=rv.JudgeOptions(judge="arith", semantic_judge=semantic_judge), insert_ratio=0.2, steps=args.steps,
        n_candidates=1, generation=rv.GenerationOptions(max_new_tokens=args.max_new_tokens), seed=args.seed,
        attack_limit=0,
    )


def attack_run(args: argparse.Namespace, backend: HFBackend, device: torch.device, level: str, batch: int, n: int,
               data_file: Path, run_dir: Path, *, chunk: int | None = None, budget_s: float | None = None,
               semantic_judge: str = "none") -> dict[str, Any]:
    """One MATCHA run: the clean pass alone (attack_limit=0), then the attack resuming the same run directory
    (its clean pass read back from the store) in chunks of ``chunk`` examples (default: all at once; 16 when
    ``budget_s`` is set), stopping after the chunk that passes ``budget_s`` seconds of attack."""
    config = matcha_config(args, level, n, data_file, semantic_judge)
    chunk = chunk or (16 if budget_s is not None else n)
    reset_peak_memory(device)
    with forced_answers(args.answer_tokens), (forced_semantic_verdicts() if semantic_judge != "none"
                                              else contextlib.nullcontext()):
        clean_s, _ = timed(device, lambda: rv.attack_matcha(config, backend, run_dir, batch_size=batch))
        attack_s, limit = 0.0, 0
        summary: dict[str, Any] = {}
        chunks: list[float] = []
        with GpuUtilisation(device) as util:
            while limit < n:
                limit = min(n, limit + chunk)
                step = dataclasses.replace(config, attack_limit=limit)

                def attack_chunk(step: rv.MatchaRunConfig = step) -> Any:
                    return rv.attack_matcha(step, backend, run_dir, batch_size=batch)

                spent, summary = timed(device, attack_chunk)
                chunks.append(spent)
                attack_s += spent
                if budget_s is not None and attack_s >= budget_s:
                    break
    run = rv.load_run(run_dir)
    rows = run.records("matcha_outcome")
    clean = {r["id"]: r["completion"] for r in run.records("matcha_clean")}
    attacked = [r for r in rows if r.get("attacked")]
    phases = {p: sum(r.get("seconds", {}).get(p, 0.0) for r in attacked) for p in ("reference", "optimise", "generate")}
    per_clean = clean_s / n
    per_attack = attack_s / len(attacked) if attacked else None
    return {
        "level": level, "batch_size": batch, "examples": n, "attacked": len(attacked),
        "skipped": sum(1 for r in rows if r.get("skip_reason")),
        "s_per_tried": attack_s / len(rows) if rows else None,  # skipped examples cost their redraws too
        "clean_s": clean_s, "attack_s": attack_s, "s_per_example_clean": per_clean, "s_per_attacked": per_attack,
        "chunk_examples": chunk, "chunks_s": chunks, "phases_s": phases,
        "gpu_util_mean": util.mean, "gpu_util_samples": len(util.samples), "gpu_util_source": util.source,
        "cpu_percent": util.cpu_percent, "peak_memory": peak_memory(device), "semantic_judge": semantic_judge,
        "gsm8k_gpu_hours": (per_clean + per_attack) * GSM8K_TEST_SIZE / 3600 if per_attack is not None else None,
        "summary": {k: summary.get(k) for k in ("n", "n_attacked", "ur", "sr", "wr")},
        "hyperparameters": summary.get("hyperparameters"),
        "outcomes": {r["id"]: {"perturbed_question_ids": r.get("perturbed_question_ids"),
                               "perturbed_completion": r.get("perturbed_completion"), "outcome": r.get("outcome"),
                               "clean_completion": clean.get(r["id"])} for r in rows},
    }


def agreement(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Examples whose perturbed question ids, perturbed completion and outcome are identical in both runs."""
    ids = sorted(set(a["outcomes"]) & set(b["outcomes"]), key=lambda k: int(k.rsplit("-", 1)[-1]))
    keys = ("perturbed_question_ids", "perturbed_completion", "outcome")
    same = [k for k in ids if all(a["outcomes"][k][f] == b["outcomes"][k][f] for f in keys)]
    clean_same = [k for k in ids if a["outcomes"][k]["clean_completion"] == b["outcomes"][k]["clean_completion"]]
    return {"compared": len(ids), "identical": len(same), "fraction": len(same) / len(ids) if ids else None,
            "clean_identical": len(clean_same), "differing_ids": [k for k in ids if k not in same][:20]}


def warm_up_attack(args: argparse.Namespace, backend: HFBackend, device: torch.device, level: str,
                   data_file: Path, run_dir: Path) -> float:
    """Seconds of an untimed warm-up run (1 example, 1 step, 4 new tokens): first-use costs (kernels, the drift
    measure, the vocabulary scan) are not charged to whichever timed run comes first."""
    warm = argparse.Namespace(**{**vars(args), "steps": 1, "max_new_tokens": 4})
    spent, _ = timed(device, lambda: attack_run(warm, backend, device, level, backend.batch_size, 1, data_file,
                                                run_dir))
    return spent


def run_attack(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, root: Path,
               results: Results) -> None:
    out = results.data.setdefault("attack", {"runs": {}, "agreement": {}})
    n_default = args.examples
    n_batch1 = min(args.batch1_examples or args.examples, args.examples)
    data_file = write_examples(args, n_default, root / "examples.jsonl")
    out["data_source"] = args.data or "robusteval.data/samples/math.jsonl (cycled)"
    name_of = f"random:{args.shape}"
    for level in args.levels:
        warm_backend = make_backend(model, tokenizer, name_of, args.batch_size)
        out.setdefault("warmup_s", {})[level] = warm_up_attack(args, warm_backend, device, level, data_file,
                                                               root / f"warmup-{level}")
        for batch in args.attack_batches:
            n = n_batch1 if batch == 1 else n_default
            name = f"{level}-b{batch}"
            print(f"attack {name}: {n} examples ...", flush=True)
            backend = make_backend(model, tokenizer, name_of, batch)
            res = attack_run(args, backend, device, level, batch, n, data_file, root / name,
                             budget_s=args.attack_budget)
            out["runs"][name] = res
            print(f"attack {name}: {res['attacked']}/{n} attacked; clean {res['clean_s']:.1f} s, attack "
                  f"{res['attack_s']:.1f} s, {fmt(res['s_per_attacked'])} s/attacked, GPU util "
                  f"{fmt(res['gpu_util_mean'], '.0f', '%')}", flush=True)
            results.save()
        runs = [out["runs"].get(f"{level}-b{b}") for b in args.attack_batches]
        if len(runs) >= 2 and all(runs):
            out["agreement"][level] = agreement(runs[0], runs[-1])
            out["agreement"][level]["batches"] = [args.attack_batches[0], args.attack_batches[-1]]
            results.save()


def eval_batches(args: argparse.Namespace, backend: HFBackend, device: torch.device, n: int, data_file: Path,
                 run_dir: Path) -> dict[str, Any]:
    """``rv.evaluate`` of ``n`` questions at the backend's batch size: the time of every ``generate`` batch, the
    first against the median of the next full ones."""
    batches: list[float] = []
    sizes: list[int] = []
    real = backend.generate

    def generate(requests: Any) -> Any:
        spent, out = timed(device, lambda: real(requests))
        batches.append(spent)
        sizes.append(len(requests))
        return out

    backend.generate = generate  # type: ignore[method-assign]
    try:
        config = rv.EvalConfig(data=rv.DataSpec("gsm8k", str(data_file), limit=n),
                               generation=rv.GenerationOptions(max_new_tokens=args.max_new_tokens))
        total, _ = timed(device, lambda: rv.evaluate(config, backend, run_dir, batch_size=backend.batch_size))
    finally:
        del backend.generate  # the instance attribute: the class's method again
    # The next batches of the full size (a short last batch would flatter the median).
    full = [t for t, size in zip(batches[1:], sizes[1:], strict=True) if size == sizes[0]] or batches[1:]
    rest = statistics.median(full) if full else None
    return {"examples": n, "batch_size": backend.batch_size, "total_s": total, "batches_s": batches,
            "batch_rows": sizes, "first_s": batches[0] if batches else None, "median_next_s": rest,
            "first_extra_s": batches[0] - rest if batches and rest is not None else None}


def run_eval(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, root: Path,
             results: Results) -> None:
    """``rv.evaluate`` at batch 8 on a fresh backend, before anything else decoded."""
    backend = make_backend(model, tokenizer, f"random:{args.shape}", 8)
    data_file = write_examples(args, args.eval_examples, root / "eval.jsonl")
    results.data["eval"] = {**eval_batches(args, backend, device, args.eval_examples, data_file, root / "eval"),
                            "note": "runs first, on the model as built (nothing decoded yet)"}
    results.save()
    ev = results.data["eval"]
    print(f"eval: {len(ev['batches_s'])} batches; first {fmt(ev['first_s'])} s, median of the next "
          f"{fmt(ev['median_next_s'])} s", flush=True)


def profile_step(args: argparse.Namespace, backend: HFBackend, device: torch.device, root: Path, target: Path,
                 *, trace: bool = True) -> dict[str, Any]:
    """A torch.profiler record of one attack step (1 example, 1 optimisation step, --profile-new-tokens): its
    top operations as a table (and the chrome trace when ``trace``), written under ``target``."""
    from torch.profiler import ProfilerActivity, profile

    target.mkdir(parents=True, exist_ok=True)
    data_file = write_examples(args, 1, root / "profile.jsonl")
    config = dataclasses.replace(matcha_config(args, "token", 1, data_file), steps=1,
                                 max_new_tokens=args.profile_new_tokens)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with forced_answers(args.answer_tokens):
        rv.attack_matcha(config, backend, root / "profile", batch_size=backend.batch_size)
        with profile(activities=activities, record_shapes=False) as prof:
            rv.attack_matcha(dataclasses.replace(config, attack_limit=None), backend, root / "profile",
                             batch_size=backend.batch_size)
            sync(device)
    figures: dict[str, Any] = {}
    if trace:
        figures["trace"] = str(target / "attack_step_trace.json")
        prof.export_chrome_trace(figures["trace"])
    key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=20)
    figures["top_ops"] = str(target / "attack_step_top_ops.txt")
    Path(figures["top_ops"]).write_text(table + "\n", encoding="utf-8")
    return figures


def run_profile(args: argparse.Namespace, model: Any, tokenizer: Any, device: torch.device, root: Path,
                results: Results) -> None:
    backend = make_backend(model, tokenizer, f"random:{args.shape}", args.batch_size)
    results.data["profile"] = profile_step(args, backend, device, root, Path(args.profile))
    results.save()
    print(f"profile: {results.data['profile']['trace']}", flush=True)
