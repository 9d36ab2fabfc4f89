"""Loading a transformers checkpoint for the ``hf:`` backend: devices, dtypes, GGUF conversion, ``from_pretrained``.

A spec ``hf:PATH_OR_ID`` loads a local directory or a hub id; ``hf:/path/model.gguf`` reads a GGUF file,
converted once into a cache directory (``$ROBUSTEVAL_CACHE``, default ``~/.cache/robusteval``) and loaded
from there afterwards.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any

import torch

from robusteval.errors import BackendError, UserError
from robusteval.models.hf_options import HFOptions
from robusteval.models.options import option_fields
from robusteval.paths import cache_root
from robusteval.progress import status

_DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
           "float16": torch.float16, "fp16": torch.float16}


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise UserError(f"device {device!r}: not a device; use auto, cpu, cuda, cuda:1, mps, ...") from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {device!r}: no CUDA device is available to this torch build "
                        f"({torch.__version__}); use --device cpu or auto")
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise UserError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return resolved


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    # bf16 on GPU halves memory at no accuracy cost that matters here; CPUs are fastest and exact in fp32.
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if dtype not in _DTYPES:
        raise UserError(f"dtype {dtype!r}: use one of auto, {', '.join(sorted(_DTYPES))}")
    return _DTYPES[dtype]


def _unloadable(what: str, exc: Exception, advice: str) -> Exception:
    """A failure inside transformers while reading user-supplied files, as one sentence; environment failures
    (memory, disk, a missing package) pass through to the CLI's own handling."""
    from robusteval.errors import environment_error

    if environment_error(exc) is not None:
        return exc
    lines = str(exc).strip().splitlines()
    detail = f"{type(exc).__name__}: {lines[0][:240]}" if lines else type(exc).__name__
    return BackendError(f"{what} ({detail}); {advice}")


def convert_gguf(gguf_path: Path) -> Path:
    """Dequantise a GGUF checkpoint once into a transformers folder under the cache; return that folder."""
    import tempfile

    from robusteval.extras import require_module

    stat = gguf_path.stat()
    tag = hashlib.sha256(f"{gguf_path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    target = cache_root() / "gguf" / f"{gguf_path.stem}-{tag}"
    if (target / "config.json").is_file() and (target / ".complete").is_file():
        return target
    # transformers reads GGUF through these two; without them it raises deep inside from_pretrained.
    require_module("gguf", purpose=f"Reading the GGUF file {gguf_path}")
    require_module("accelerate", purpose=f"Reading the GGUF file {gguf_path}")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    status(f"converting {gguf_path.name} once into {target.parent} (later runs reuse it)")

    model: Any  # a PreTrainedModel, whose attributes nn.Module types as Tensor | Module
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                     dtype=torch.float32)
    except Exception as exc:
        raise _unloadable(f"hf:{gguf_path}: cannot read this GGUF file", exc,
                          "the file may be truncated or corrupt (download it again), or its architecture or "
                          "quantisation is not supported by transformers' GGUF reader") from exc
    # The weights are already dequantised to fp32; the GGUF "quantizer" left on the model only blocks saving.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    # A private temporary folder per process: concurrent conversions never write into each other's files.
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / ".complete").write_text(str(gguf_path.resolve()) + "\n", encoding="utf-8")
        if not target.exists():  # else a concurrent conversion finished first; keep it
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return target


#: ``--model-args`` keys passed to ``from_pretrained`` (the tokenizer gets the first two).
MODEL_ARGS = tuple(name for name, field in option_fields(HFOptions).items() if field.metadata.get("from_pretrained"))


def load_hf_model(target: str, *, dtype: str = "auto", device: str = "auto",
                  model_args: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """Load (model, tokenizer) from a local folder, a GGUF file (converted once) or a hub id.

    ``model_args`` go to ``from_pretrained``: revision, trust_remote_code, attn_implementation, device_map
    (the model is then placed by accelerate, not moved to ``device``), low_cpu_mem_usage.
    """
    model_args = dict(model_args or {})
    unknown = sorted(set(model_args) - set(MODEL_ARGS))
    if unknown:
        raise UserError(f"model args: unknown key(s) {', '.join(unknown)}; hf accepts {', '.join(MODEL_ARGS)}")
    tokenizer_args = {k: model_args[k] for k in ("revision", "trust_remote_code") if k in model_args}
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    if not sys.stderr.isatty():  # tqdm bars in a log file are hundreds of carriage returns, not progress
        hf_logging.disable_progress_bar()
    path = Path(target).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise UserError(f"hf:{target}: GGUF file not found")
        path = convert_gguf(path)
    elif target.startswith((".", "/", "~")) and not path.exists():
        raise UserError(f"hf:{target}: no such model directory")
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    source = str(path) if path.exists() else target  # otherwise a hub id: the real download path for users
    status(f"loading hf:{target} on {torch_device} ({str(torch_dtype).removeprefix('torch.')})")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **tokenizer_args)
        model = _from_pretrained(AutoModelForCausalLM, source, torch_dtype, model_args)
    except Exception as exc:
        raise _unloadable(f"hf:{target}: cannot load the model", exc,
                          "check that the folder holds a complete transformers checkpoint (config.json, weights, "
                          "tokenizer files) whose architecture this transformers version supports, or download "
                          "it again") from exc
    return (model if "device_map" in model_args else model.to(torch_device)), tokenizer


def _from_pretrained(auto: Any, source: str, dtype: torch.dtype, model_args: dict[str, Any]) -> Any:
    """The model with SDPA attention unless ``model_args`` names another: SDPA keeps a long prompt's memory in
    proportion to its KV cache where transformers can leave causality to ``is_causal`` (eager attention always
    builds [Q, K] scores; see :func:`~robusteval.models.hf_forward.mask_budget`). An architecture without SDPA loads with transformers' choice."""
    if "attn_implementation" in model_args:
        return auto.from_pretrained(source, dtype=dtype, **model_args)
    try:
        return auto.from_pretrained(source, dtype=dtype, attn_implementation="sdpa", **model_args)
    except ValueError as exc:
        if "sdpa" not in str(exc).lower():
            raise
        return auto.from_pretrained(source, dtype=dtype, **model_args)


THINKING_SWITCH = ("on", "off")


def check_thinking_option(thinking: str | None) -> None:
    """``--thinking``: ``on``, ``off`` or unset (the template's default)."""
    if thinking is not None and thinking not in THINKING_SWITCH:
        raise UserError(f"--thinking {thinking}: use on or off (unset: the chat template's default)")
