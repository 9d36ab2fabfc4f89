"""Executors: where :func:`robusteval.runner.run_units` computes its batches (in process by default, or on a
pool of Ray workers, one per device). See ``docs/scaling.md``."""

from robusteval.executors.base import (
    BatchResult,
    Executor,
    InProcessExecutor,
    current_executor,
    use_executor,
)

__all__ = ["BatchResult", "Executor", "InProcessExecutor", "current_executor", "make_executor", "use_executor"]


def make_executor(name: str = "inprocess", *, address: str | None = None, workers: int | None = None) -> Executor:
    """``inprocess`` or ``ray`` (``address``: ``auto``, ``ray://HOST:PORT`` or None for a local cluster of this
    machine; ``workers``: how many, default one per GPU, else one per CPU)."""
    if name == "inprocess":
        return InProcessExecutor()
    if name == "ray":
        from robusteval.executors.ray import RayExecutor

        return RayExecutor(address=address, workers=workers)
    from robusteval.errors import UserError

    raise UserError(f"executor {name!r}: use inprocess or ray")
