"""Find host/accelerator device mismatches on a CPU-only machine.

The white-box attacks run on GPUs, the tests on CPU, where a CPU tensor indexed by indices that live on the
GPU (or concatenated with a GPU tensor) cannot fail. ``FakeTensorMode`` and the ``meta`` device let such
mixes pass, so this module simulates a second device instead, by *taint tracking* on real CPU tensors:

* The simulated accelerator is ``torch.device("cpu", 0)`` (:data:`ACCELERATOR`): torch computes on it as on
  the CPU, but code that asks for it (``device=backend.device``) is visibly asking for "the GPU".
* Tensors on it: the model's parameters and buffers (registered on entry); outputs of factory ops given
  ``device=cpu:0`` and of ``.to(cpu:0)``; and every new output of an op with an input on it, except
  ``.cpu()`` / ``.to("cpu")``, which make a host copy. Everything else is on the host.
* ``t.device`` reports ``cpu:0`` for tensors on the accelerator, so ``torch.arange(n, device=x.device)``
  follows ``x`` as on a GPU; ``torch.tensor``/``as_tensor``/``asarray``/``Tensor.new_tensor`` honour their
  ``device`` argument through ``.to`` (their aten op carries no device).

Violations (what CUDA rejects), checked on every aten op:

* any op mixing accelerator tensors with host tensors of one or more dimensions; 0-dim host tensors are CPU
  scalars, which CUDA accepts (``torch.tensor(2.0) * x``); a 0-dim accelerator tensor with a host tensor
  is still rejected;
* except advanced indexing (``index``, ``index_put``): an accelerator tensor may be indexed by host indices,
  but a host tensor by accelerator indices may not, and ``index_put`` values must be on the indexed
  tensor's device unless 0-dim;
* except ``copy_``, which copies across devices (``x_gpu[:] = host``);
* a CPU ``torch.Generator`` driving a random op on the accelerator (a generator cannot be simulated on
  ``cpu:0``, so every generator counts as a CPU one);
* ``.numpy()`` / ``np.asarray`` of an accelerator tensor.

Factory ops that ask for the plain CPU (``device=cpu``) are host tensors, unless they run inside a torch
call on accelerator tensors (a composite op such as ``F.one_hot`` creates its internals with its input's
real device, which is the CPU here and the GPU on a GPU).
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.weak import WeakTensorKeyDictionary

import robusteval

#: The simulated accelerator: a CPU device with an index, so requests for it can be told from host ones.
ACCELERATOR = torch.device("cpu", 0)
HOST = torch.device("cpu")

_aten = torch.ops.aten
_COPIES = {_aten.copy_, _aten.copy, _aten._copy_from, _aten._copy_from_and_resize}
_INDEX = {_aten.index, _aten._unsafe_index}
_INDEX_PUT = {_aten.index_put, _aten.index_put_, _aten._index_put_impl_, _aten._unsafe_index_put}
# Attribute getters reach __torch_function__ as the descriptor's bound __get__.
_DEVICE_GETTER = torch._C.TensorBase.__dict__["device"]
_DATA_GETTER = torch._C.TensorBase.__dict__["data"]
_CREATORS = {torch.tensor, torch.as_tensor, torch.asarray, torch.Tensor.new_tensor}
_TO_NUMPY = {torch.Tensor.numpy, torch.Tensor.__array__}

_PROJECT_DIRS = (str(Path(robusteval.__file__).resolve().parent), str(Path(__file__).resolve().parents[1]))
_THIS_FILE = str(Path(__file__).resolve())
_TORCH_DIR = str(Path(torch.__file__).resolve().parent)


@dataclass
class Violation:
    """One kind of device mismatch: the op, its tensor arguments' devices and where it was called."""

    op: str
    arguments: str  # e.g. "self=host[600], indices[0]=accelerator[2, 1]"
    where: tuple[str, ...]  # innermost last: "src/robusteval/attacks/matcha/token.py:106 in token_attack"
    count: int = 1

    def __str__(self) -> str:
        times = f" (x{self.count})" if self.count > 1 else ""
        return f"{self.op}({self.arguments}){times}\n      at " + "\n      <- ".join(reversed(self.where))


class DeviceAudit:
    """Taint tracking of which tensors live on the simulated accelerator; use :func:`audit_devices`."""

    def __init__(self) -> None:
        self._on_accelerator: WeakTensorKeyDictionary = WeakTensorKeyDictionary()
        self._found: dict[tuple[str, str, tuple[str, ...]], Violation] = {}
        # Per Python-level torch call: whether it has accelerator tensor arguments (see _mark).
        self._calls: list[bool] = []
        self._modes = ExitStack()

    # ------------------------------------------------------------------ placement
    def place(self, *tensors: torch.Tensor) -> None:
        """Declare ``tensors`` to live on the accelerator (as ``model.to("cuda")`` would put them)."""
        for tensor in tensors:
            self._on_accelerator[tensor] = True

    def on_accelerator(self, tensor: torch.Tensor) -> bool:
        return tensor in self._on_accelerator

    def _to_host(self, tensor: torch.Tensor) -> None:
        self._on_accelerator.pop(tensor, None)

    def _where(self, tensor: torch.Tensor) -> str:
        side = "accelerator" if self.on_accelerator(tensor) else "host"
        return f"{side}{list(tensor.shape)}"

    # ------------------------------------------------------------------ results
    @property
    def violations(self) -> list[Violation]:
        return list(self._found.values())

    def assert_clean(self) -> None:
        if self._found:
            listed = "\n  ".join(str(v) for v in self._found.values())
            raise AssertionError(f"{len(self._found)} device mismatch(es) that CUDA would reject:\n  {listed}")

    def _record(self, op: str, arguments: str) -> None:
        where = _call_site()
        key = (op, arguments, where)
        if key in self._found:
            self._found[key].count += 1
        else:
            self._found[key] = Violation(op, arguments, where)

    # ------------------------------------------------------------------ modes
    def __enter__(self) -> DeviceAudit:
        self._modes.enter_context(_PythonLayer(self))
        self._modes.enter_context(_AtenLayer(self))
        return self

    def __exit__(self, *exc: object) -> None:
        self._modes.close()

    # ------------------------------------------------------------------ aten-level rules
    def _check(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        packet = func.overloadpacket
        named = _named_tensors(func, args, kwargs)
        on_acc = [(name, t) for name, t in named if self.on_accelerator(t)]
        generator = kwargs.get("generator")
        if generator is not None and (on_acc or _requested(kwargs) == ACCELERATOR):
            parts = [f"generator={generator.device.type}", _describe(self, named)]
            if _requested(kwargs) == ACCELERATOR:
                parts.append("device=accelerator")
            self._record(str(packet), ", ".join(p for p in parts if p))
        if not on_acc or packet in _COPIES:
            return
        if packet in _INDEX or packet in _INDEX_PUT:
            bad = self._bad_indexing(packet, args)
        else:  # everything else needs one device, apart from host CPU scalars
            bad = any(not self.on_accelerator(t) and t.dim() > 0 for _, t in named)
        if bad:
            self._record(str(packet), _describe(self, named))

    def _bad_indexing(self, packet: Any, args: tuple[Any, ...]) -> bool:
        source, indices = args[0], [i for i in args[1] if i is not None]
        if packet in _INDEX_PUT:
            values = args[2]
            if self.on_accelerator(source):
                return not self.on_accelerator(values) and values.dim() > 0
            if self.on_accelerator(values) and values.dim() > 0:
                return True
        # Host indices into an accelerator tensor are moved there; accelerator indices into a host tensor fail.
        return not self.on_accelerator(source) and any(self.on_accelerator(i) for i in indices)

    def _mark(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        outputs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        if not outputs:
            return
        inputs = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        requested = _requested(kwargs)
        if requested == ACCELERATOR:
            accelerator = True
        elif requested is not None and requested.type == "cpu":
            accelerator = self._calls[-1] if self._calls else False
        else:
            accelerator = any(self.on_accelerator(t) for t in inputs)
        for tensor in outputs:
            if any(tensor is t for t in inputs):
                continue  # in-place or out=: the tensor stays where it is
            if accelerator:
                self._on_accelerator[tensor] = True
            else:
                self._to_host(tensor)

    # ------------------------------------------------------------------ Python-level rules
    def _python_call(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        getter = getattr(func, "__self__", None)
        if getter is _DEVICE_GETTER:
            return ACCELERATOR if self.on_accelerator(args[0]) else func(*args, **kwargs)
        if getter is _DATA_GETTER:
            out = func(*args, **kwargs)
            if self.on_accelerator(args[0]):
                self.place(out)
            return out
        if func in _TO_NUMPY and self.on_accelerator(args[0]):
            self._record(f"Tensor.{func.__name__}", _describe(self, [("self", args[0])]))
        if func in _CREATORS:
            return self._create(func, args, kwargs)
        if func is torch.Tensor.to or func is torch.Tensor.cpu:
            moved = self._move(func, args, kwargs)
            if moved is not None:
                return moved
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        self._calls.append(any(self.on_accelerator(t) for t in tensors))
        try:
            return func(*args, **kwargs)
        finally:
            self._calls.pop()

    def _create(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
        """torch.tensor & co.: their aten op (lift_fresh) has no device, so apply it with ``.to``."""
        kwargs = dict(kwargs)
        device = kwargs.pop("device", None)
        requires_grad = kwargs.pop("requires_grad", False)
        if func is torch.Tensor.new_tensor and device is None and self.on_accelerator(args[0]):
            device = ACCELERATOR
        out = func(*args, **kwargs)
        if device is not None:
            out = out.to(device)
            if torch.device(device) == HOST:
                self._to_host(out)
        return out.requires_grad_(True) if requires_grad else out

    def _move(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor | None:
        """``.cpu()`` / ``.to("cpu")`` of an accelerator tensor: a host copy (the real call returns the tensor
        itself, which is already on the CPU). ``.to(other)`` follows ``other``'s simulated device."""
        source = args[0]
        if func is torch.Tensor.cpu:
            target, dtype, non_blocking = HOST, None, False
        else:
            rest, options = list(args[1:]), dict(kwargs)
            options.pop("copy", None)
            if rest and isinstance(rest[0], torch.Tensor):
                other = rest.pop(0)
                options.setdefault("dtype", other.dtype)
                rest.insert(0, ACCELERATOR if self.on_accelerator(other) else HOST)
            try:
                target, dtype, non_blocking, _ = torch._C._nn._parse_to(*rest, **options)
            except (TypeError, RuntimeError):
                return None  # an unusual signature: let the real call handle it
            if target is None:
                return None
        if target == ACCELERATOR and args[1:2] and isinstance(args[1], torch.Tensor):
            return torch._C.TensorBase.to(source, ACCELERATOR, dtype=dtype or source.dtype, non_blocking=non_blocking)
        if target != HOST or not self.on_accelerator(source):
            return None
        out = torch._C.TensorBase.to(source, HOST, dtype=dtype or source.dtype, non_blocking=non_blocking, copy=True)
        self._to_host(out)
        return out


class _PythonLayer(TorchFunctionMode):
    """Sees Python-level torch calls: ``t.device``, ``.cpu()``, ``torch.tensor(..., device=...)``."""

    def __init__(self, audit: DeviceAudit) -> None:
        super().__init__()
        self.audit = audit

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        return self.audit._python_call(func, args, kwargs or {})


class _AtenLayer(TorchDispatchMode):
    """Sees every aten op (forward and backward): checks devices, then marks the outputs."""

    def __init__(self, audit: DeviceAudit) -> None:
        super().__init__()
        self.audit = audit

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        self.audit._check(func, args, kwargs)
        out = func(*args, **kwargs)
        self.audit._mark(func, args, kwargs, out)
        return out


def _requested(kwargs: dict[str, Any]) -> torch.device | None:
    device = kwargs.get("device")
    return None if device is None else torch.device(device)


def _named_tensors(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """Tensor arguments by schema name (``indices[1]`` for lists), for readable reports."""
    named = []
    for position, argument in enumerate(func._schema.arguments):
        value = args[position] if position < len(args) else kwargs.get(argument.name)
        if isinstance(value, torch.Tensor):
            named.append((argument.name, value))
        elif isinstance(value, list | tuple):
            named += [(f"{argument.name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, torch.Tensor)]
    return named


def _describe(audit: DeviceAudit, named: list[tuple[str, torch.Tensor]]) -> str:
    return ", ".join(f"{name}={audit._where(t)}" for name, t in named)


def _call_site() -> tuple[str, ...]:
    """The calling frames worth reading: the project's own (src/robusteval, tests), innermost three, after the
    innermost library frame outside torch when that is where the op was called (e.g. transformers)."""
    frames = [f for f in traceback.extract_stack() if f.filename != _THIS_FILE]
    outside_torch = [f for f in frames if not f.filename.startswith(_TORCH_DIR)]
    ours = [f for f in outside_torch if f.filename.startswith(_PROJECT_DIRS)][-3:]
    picked = ours
    if outside_torch and (not ours or outside_torch[-1] is not ours[-1]):
        picked = [*ours, outside_torch[-1]]
    return tuple(f"{_short(f.filename)}:{f.lineno} in {f.name}" for f in picked)


def _short(filename: str) -> str:
    """``src/robusteval/...``, ``tests/...`` or the path inside site-packages."""
    for marker, head in (("/src/robusteval/", "src/robusteval/"), ("/tests/", "tests/"), ("/site-packages/", "")):
        if marker in filename:
            return head + filename.rsplit(marker, 1)[1]
    return filename


@contextmanager
def audit_devices(target: Any) -> Iterator[DeviceAudit]:
    """Run the body as if ``target`` (a torch module, or a backend with ``.model`` and ``.device``, such as
    ``HFBackend``) lived on an accelerator; the audit then lists the device mismatches it saw.

    A backend's ``device`` is the accelerator meanwhile (it creates its inputs there) and its cached prefixes
    are set aside: they were computed outside the audit, on the host, and the audit's own are dropped after.
    """
    backend = None if isinstance(target, torch.nn.Module) else target
    model = target if backend is None else backend.model
    audit = DeviceAudit()
    audit.place(*model.parameters(), *model.buffers())
    saved: dict[str, Any] = {}
    if backend is not None:
        for name, value in (("device", ACCELERATOR), ("_prefixes", {})):
            if hasattr(backend, name):
                saved[name] = getattr(backend, name)
                setattr(backend, name, value)
    try:
        with audit:
            yield audit
    finally:
        for name, value in saved.items():
            setattr(backend, name, value)
