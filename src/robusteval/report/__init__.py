"""Reports of finished runs: terminal tables (``tables``), the worked example (``examples``), leaderboards
(``compare``) and the self-contained HTML report (``build``, section builders, ``html``)::

    import robusteval as rv
    rv.report(["runs/matcha-llama", "runs/matcha-qwen", "runs/varmath"], out="report.html")

``robusteval.report`` is both this package and the function the API promises: the package is callable
(``robusteval.report(...)`` is :func:`robusteval.report.build.build_report`), so whichever is imported first,
``import robusteval.report.tables`` and ``rv.report(...)`` both work. Importing it loads no torch.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def report(run_dirs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
           out: str | os.PathLike[str] = "report.html", *, title: str | None = None) -> Path:
    """Write one self-contained HTML report of ``run_dirs`` to ``out``; returns its path
    (see :func:`robusteval.report.build.build_report`)."""
    from robusteval.report.build import build_report

    return build_report(run_dirs, out, title=title)


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Path:
        return report(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
