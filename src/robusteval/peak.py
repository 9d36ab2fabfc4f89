"""Peak memory of this process: what a run records in its summary and ``run.log`` and the quick-start prints.

Resident memory is the kernel's high-water mark (``getrusage``: ``ru_maxrss``, KiB on Linux, bytes on macOS) of this
process, and of its largest finished child when there was one (a worker pool that has exited); device memory is
torch's peak allocation on the current CUDA device, when this process used one (torch is never imported for it).
"""

from __future__ import annotations

import resource
import sys
from typing import Any

_RSS_UNIT = 1 if sys.platform == "darwin" else 1024


def peak_memory() -> dict[str, int]:
    """``{"rss_bytes": ..., "children_rss_bytes": ... (a finished child's), "device_bytes": ... (cuda)}``."""
    out = {"rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _RSS_UNIT}
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * _RSS_UNIT
    if children:
        out["children_rss_bytes"] = children
    torch: Any = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        out["device_bytes"] = int(torch.cuda.max_memory_allocated())
    return out


def gib(n: float) -> str:
    """Bytes as GiB with two decimals (``3.07 GiB``)."""
    return f"{n / 2**30:.2f} GiB"


def describe(peak: dict[str, int]) -> str:
    """One line: ``peak memory 3.07 GiB resident (largest worker 1.20 GiB), 5.50 GiB on the device``."""
    text = f"peak memory {gib(peak['rss_bytes'])} resident"
    if peak.get("children_rss_bytes"):
        text += f" (largest finished child process {gib(peak['children_rss_bytes'])})"
    if "device_bytes" in peak:
        text += f", {gib(peak['device_bytes'])} on the device"
    return text
