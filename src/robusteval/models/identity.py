"""What a model *is*, normalised, before and after it loads: the run identity's ``model`` field.

Two runs are comparable only when they ran the same weights in the same numeric setting, so the identity holds
the normalised source (absolute path, or hub id + revision), a fingerprint of the config and the weights'
index (cheap: headers and sizes, not gigabytes of tensors), the resolved dtype and device type, and the
loading options that change outputs. It is computed from the spec and options alone, so a resumed run is
checked against it before the model loads; a loaded backend carries the same dict as ``backend.identity``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Unpack

from robusteval.errors import UserError
from robusteval.models.load_options import LoadOptions
from robusteval.models.options import CommonOptions, from_pretrained, recorded
from robusteval.models.registry import ModelSpec, model_host, parse_spec, resolve_options

#: Bytes of a weights file read for its fingerprint (safetensors and GGUF keep their index in the header).
_HEAD_BYTES = 16 << 20
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf", ".index.json")


def _file_fingerprint(path: Path, digest: Any) -> None:
    size = path.stat().st_size
    digest.update(f"{path.name}:{size}:".encode())
    with path.open("rb") as handle:
        if path.suffix == ".safetensors":
            # 8-byte length, then the JSON header with every tensor's name, dtype, shape and offsets.
            length = int.from_bytes(handle.read(8), "little")
            digest.update(handle.read(min(length, _HEAD_BYTES)))
        else:
            digest.update(handle.read(_HEAD_BYTES))
            if size > 2 * _HEAD_BYTES:
                handle.seek(size - (1 << 20))
                digest.update(handle.read())


def weights_fingerprint(path: Path) -> str:
    """sha256 over config.json and every weight file's name, size and header (a GGUF file: its head and tail)."""
    digest = hashlib.sha256()
    if path.is_file():
        _file_fingerprint(path, digest)
        return digest.hexdigest()
    for name in ("config.json", "generation_config.json"):
        if (path / name).is_file():
            digest.update(name.encode() + (path / name).read_bytes())
    for file in sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES)):
        _file_fingerprint(file, digest)
    return digest.hexdigest()


def describe_model(spec: str | ModelSpec, **options: Unpack[LoadOptions]) -> dict[str, Any]:
    """The normalised identity of ``spec`` under ``options`` (dtype, device, endpoint, ...: ``load_model``'s), as
    the machines that will run it resolve it: here, or a distributed executor's workers (``device auto`` is the
    workers' GPU even when this process has none)."""
    try:
        resolve_options(spec, options)
    except UserError as exc:
        raise UserError(f"describe_model(): {exc}") from None
    host = model_host()
    return describe_here(spec, **options) if host is None else host.describe_model(spec, dict(options))


def describe_here(spec: str | ModelSpec, **options: Any) -> dict[str, Any]:
    """:func:`describe_model` resolved in this process: what the spec names, then the options the backend's
    options class records in the identity (:func:`~robusteval.models.options.recorded`)."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    resolved = resolve_options(parsed, options)
    if parsed.kind == "hf":
        return _describe_hf(parsed, resolved)
    if parsed.kind == "openai":
        return {"backend": "openai", "model": parsed.target, "base_url": parsed.base_url, **recorded(resolved)}
    return {"backend": parsed.kind, "target": parsed.target, **recorded(resolved)}


def _describe_hf(spec: ModelSpec, options: CommonOptions) -> dict[str, Any]:
    from robusteval.models.hf import resolve_device, resolve_dtype

    device = resolve_device(options.device)
    dtype = resolve_dtype(options.dtype, device)
    model_args = from_pretrained(options)
    path = Path(spec.target).expanduser()
    identity: dict[str, Any] = {"backend": "hf"}
    if path.exists():
        identity["source"] = str(path.resolve())
        identity["weights_sha256"] = weights_fingerprint(path)
    else:  # a hub id: the revision pins the files (users' machines download them)
        identity["source"] = spec.target
        identity["revision"] = model_args.get("revision", "main")
    identity["dtype"] = str(dtype).removeprefix("torch.")
    identity["device"] = device.type
    if model_args:
        identity["model_args"] = model_args
    return {**identity, **recorded(options)}  # thinking, when set


def identity_key(identity: dict[str, Any]) -> str:
    """A short stable string for unit keys: the backend kind and a hash of the whole identity."""
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), default=str)
    return f"{identity.get('backend', 'model')}:{hashlib.sha256(blob.encode()).hexdigest()[:20]}"


def backend_identity(backend: Any) -> dict[str, Any]:
    """``backend.identity`` (set by :func:`~robusteval.models.load_backend`), else its name."""
    identity = getattr(backend, "identity", None)
    return dict(identity) if identity else {"backend": "unknown", "name": getattr(backend, "name", repr(backend))}


def backend_key(backend: Any) -> str:
    """What keys a backend's stored units: changes whenever its identity (weights, dtype, device...) does."""
    return identity_key(backend_identity(backend))
