"""Sweeps: one attack over a grid of settings, seeds and models, one resumable run per point, one table.

The paper's analyses are sweeps (optimisation steps and insertion ratio, Fig. 4; baselines as mean(std) over
seeds, Table 3), and a cross-scale stress test is a sweep over models. Every (model, grid point, seed) is an
ordinary run directory under ``out`` (``<model>/<point>/seed-<s>``), checked, locked and resumed like any run;
the table gives mean and sample standard deviation over seeds of the method's rates (its registration's
``summary_rates``: MATCHA's ACC/UR/SR/WR) and of the shares of its breakdown (its results' ``sweep_counts``:
MATCHA's error types of the successes).

Points that share a clean pass (same model, data, prompt and generation budget: it does not depend on the
steps, ratios or seed) reuse it: its stored units are copied into the next run directory before that run
starts, so it is computed once per model.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from robusteval.config import block_of, with_options
from robusteval.errors import UserError
from robusteval.methods import MethodSpec, method_named
from robusteval.metrics.stats import mean_std
from robusteval.progress import status
from robusteval.store import RunStore, write_text_atomic
from robusteval.studies.options import option_fields

#: A breakdown of a summary's examples by kind (``MethodResults.sweep_counts``).
Counts = Callable[[Mapping[str, Any]], Mapping[str, int]]


def sweep_metrics(attack_name: str) -> tuple[str, ...]:
    """The summary fields a sweep of ``attack_name`` averages over seeds (its ``MethodSpec.sweep_metrics``;
    none for an attack no method registers)."""
    spec = method_named(attack_name)
    return spec.sweep_metrics if spec is not None else ()


def _sweep_counts(spec: MethodSpec | None) -> Counts | None:
    results = spec.load_results() if spec is not None else None
    return results.sweep_counts if results is not None else None


def parse_grid(items: Sequence[str], config_type: type) -> dict[str, list[Any]]:
    """``["steps=1,3,5", "insert_ratio=0.1,0.2"]`` -> values typed like the config's fields. A key of a shared
    block (``generation``) is named flat or by its path: ``max_new_tokens=64,128`` or
    ``generation.max_new_tokens=64,128`` (the grid names it flat)."""
    hints = typing.get_type_hints(config_type)
    fields = {f.name for f in dataclasses.fields(config_type) if not f.metadata.get("nested")}
    blocks = {f"{block}.{name}": name for name in option_fields(config_type)
              if (block := block_of(config_type, name)) is not None}
    for name in blocks.values():
        hints[name] = option_fields(config_type)[name][1]
    fields |= set(blocks.values())
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        name = name.strip().replace("-", "_")
        name = blocks.get(name, name)
        if not eq or not values.strip():
            raise UserError(f"--grid {item}: expected NAME=V1,V2,...")
        if name not in fields or name == "seed":
            hint = " (use --seeds for seeds)" if name == "seed" else ""
            raise UserError(f"--grid {item}: '{name}' is not a setting of this attack{hint}; "
                            f"settings: {', '.join(sorted(fields - {'seed'}))}")
        grid[name] = [_typed(value.strip(), hints[name], item) for value in values.split(",") if value.strip()]
    return grid


def _typed(value: str, annotation: Any, item: str) -> Any:
    kinds = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    kind = kinds[0]
    try:
        if kind is bool:
            if value.lower() not in ("true", "false"):
                raise ValueError(value)
            return value.lower() == "true"
        return kind(value) if kind in (int, float) else value
    except ValueError:
        raise UserError(f"--grid {item}: {value!r} is not a {getattr(kind, '__name__', kind)}") from None


def points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the order given."""
    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(grid[n] for n in names))]


def slug(values: Mapping[str, Any]) -> str:
    """A directory name for a grid point: ``steps-3_insert_ratio-0.2`` (``default`` for the empty grid)."""
    text = "_".join(f"{name}-{value}" for name, value in values.items()) or "default"
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", text)


def aggregate(summaries: Sequence[Mapping[str, Any]], metrics: Sequence[str],
              counts: Counts | None = None) -> dict[str, Any]:
    """mean(std) over seeds of ``metrics`` (summary fields) and of each kind's share of ``counts(summary)``
    (MATCHA's error types of the successes)."""
    out: dict[str, Any] = {"n_seeds": len(summaries)}
    for name in metrics:
        mean, std = mean_std([s.get(name) for s in summaries])
        out[name] = {"mean": mean, "std": std}
    breakdowns = [counts(s) for s in summaries] if counts is not None else []
    kinds = sorted({k for c in breakdowns for k in c})
    for kind in kinds:
        shares = []
        for c in breakdowns:
            total = sum(c.values())
            shares.append(c.get(kind, 0) / total if total else None)
        mean, std = mean_std(shares)
        out[f"share:{kind}"] = {"mean": mean, "std": std}
    return out


def copy_units(source: Path, target: RunStore, stages: Sequence[str]) -> int:
    """Copy ``stages``' units of the run directory ``source`` into the open store ``target`` (units it already
    holds are kept); returns how many were copied. Unit keys name everything the unit depends on, so a copied
    unit is exactly what the target run would have computed."""
    copied = 0
    with RunStore.open_existing(source) as src:
        for stage in stages:
            have = target.keys(stage)
            for unit in src.iter_units(stage):
                if unit["key"] not in have:
                    target.put(stage, unit["key"], unit["record"], example_id=unit["example_id"],
                               seconds=unit["seconds"], created=unit["created"])
                    copied += 1
    return copied


def sweep(
    attack_name: str,
    config: Any,
    out: str | os.PathLike[str],
    *,
    grid: Mapping[str, Sequence[Any]] | None = None,
    seeds: Sequence[int] = (0,),
    models: Sequence[str] | None = None,
    load_model: Callable[[str], Any] | None = None,
    backend: Any = None,
    batch_size: int = 8,
) -> dict[str, Any]:
    """Run ``attack_name`` with ``config`` at every (model, grid point, seed); return (and write to
    ``out/sweep.json``) the per-run summaries and the mean(std) table.

    Give ``backend`` for one already loaded model, or ``models`` (specs) with ``load_model(spec)`` (default
    ``robusteval.load_model``); models are loaded one at a time, the previous one released first.
    """
    from robusteval.attacks.base import get_attack
    from robusteval.lifecycle import open_run
    from robusteval.models import load_backend
    from robusteval.models.identity import backend_identity

    attack = get_attack(attack_name)
    if backend is None and not models:
        raise UserError("sweep: give a loaded backend or at least one model spec")
    if not seeds:
        raise UserError("--seeds: give at least one seed")
    plan = points(grid or {})
    root = Path(out)
    method = method_named(attack_name)
    shared = method.shared_stages if method is not None else ()  # units that depend only on model, data and prompt
    metrics = sweep_metrics(attack_name)
    counts = _sweep_counts(method)
    examples = config.data.load()
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    specs: list[str | None] = list(models) if models else [None]
    for spec in specs:
        model = backend if spec is None else (load_model or load_backend)(spec)
        model_name = getattr(model, "name", str(spec))
        model_dir = root / slug({"model": Path(model_name.split(":", 1)[-1]).name or model_name})
        first_run: Path | None = None
        for point in plan:
            summaries = []
            for seed in seeds:
                run_config = with_options(config, {**point, "seed": seed})
                run_dir = model_dir / slug(point) / f"seed-{seed}"
                status(f"sweep: {model_name} {slug(point)} seed {seed} -> {run_dir}")
                identity = attack.identity(run_config, backend_identity(model), examples)
                with open_run(run_dir, identity, info={"sweep": str(root)}) as (store, _):
                    if first_run is not None and first_run != run_dir:
                        copy_units(first_run, store, shared)  # the clean pass is computed once per model
                    summary = dict(attack.run(run_config, model, store, load_model=load_model,
                                              batch_size=batch_size))
                first_run = first_run or run_dir
                summaries.append(summary)
                runs.append({"model": model_name, "point": point, "seed": seed, "run_dir": str(run_dir),
                             **{k: summary.get(k) for k in metrics}})
            rows.append({"model": model_name, "point": point, **aggregate(summaries, metrics, counts)})
        if spec is not None:
            del model  # release the weights before the next model loads
    result = {"attack": attack_name, "grid": {k: list(v) for k, v in (grid or {}).items()}, "seeds": list(seeds),
              "models": [r["model"] for r in rows[:: max(1, len(plan))]], "table": rows, "runs": runs}
    root.mkdir(parents=True, exist_ok=True)
    write_text_atomic(root / "sweep.json", json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    return result


def table_rows(result: Mapping[str, Any]) -> tuple[list[dict[str, str]], list[str]]:
    """Printable rows: model, the grid point's values, and ``mean (std)`` per metric (the swept method's
    ``sweep_metrics``) and per share of its breakdown (MATCHA's error types)."""
    grid_names = list(result["grid"])
    metrics = sweep_metrics(result["attack"])
    shares = sorted({k for row in result["table"] for k in row if k.startswith("share:")})
    columns = ["model", *grid_names, "n_seeds", *metrics, *shares]
    printable = []
    for row in result["table"]:
        cells: dict[str, str] = {"model": row["model"], "n_seeds": str(row["n_seeds"])}
        for name in grid_names:
            cells[name] = str(row["point"].get(name))
        for name in (*metrics, *shares):
            value = row.get(name) or {}
            mean, std = value.get("mean"), value.get("std")
            cells[name] = "-" if mean is None else f"{mean:.3f}" + (f" ({std:.3f})" if std is not None else "")
        printable.append(cells)
    return printable, columns

