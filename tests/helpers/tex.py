"""Compiling exported LaTeX with a real TeX engine (Debian's ``pdflatex``; ``.ci/run`` installs it).

:func:`compile_tables` wraps a file of tables in a minimal two-column ``article`` with ``booktabs`` (a ``table``
then sits in one column, a ``table*`` across the page, as in a paper) and runs ``pdflatex -interaction=nonstopmode
-halt-on-error``; any error or ``Overfull \\hbox`` in the log fails the test. Without ``pdflatex`` the test skips, or
fails under ``ROBUSTEVAL_REQUIRE_ALL=1`` as in CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers.shared import REQUIRE_ALL, skip_or_fail

DOCUMENT = r"""\documentclass[twocolumn]{article}
\usepackage{booktabs}
\begin{document}
%s
\end{document}
"""


def pdflatex() -> str:
    found = os.environ.get("ROBUSTEVAL_PDFLATEX") or shutil.which("pdflatex")
    if not found:
        skip_or_fail("no pdflatex installed (apt-get install texlive-latex-base texlive-latex-recommended "
                     "texlive-fonts-recommended lmodern)", REQUIRE_ALL)
    return found


def compile_tables(tables: str, where: Path, name: str = "tables") -> str:
    """Compile ``tables`` (what an export wrote) in a minimal document under ``where``; returns the log. Fails
    the test on any TeX error, overfull box or float too large for the page."""
    engine = pdflatex()
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{name}.tex").write_text(DOCUMENT % tables, encoding="utf-8")
    done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", f"{name}.tex"], cwd=where,
                          capture_output=True, text=True, timeout=120, check=False)
    log = (where / f"{name}.log").read_text(encoding="latin-1") if (where / f"{name}.log").exists() else done.stdout
    problems = [line for line in log.splitlines()
                if line.startswith("!") or "Overfull \\hbox" in line or "Float too large" in line
                or "LaTeX Error" in line or "Missing character" in line]
    if done.returncode != 0 or problems:
        tail = "\n".join(problems[:10]) or log[-2000:]
        pytest.fail(f"pdflatex failed on {where / name}.tex (exit {done.returncode}):\n{tail}", pytrace=False)
    return log


def table_environments(latex: str) -> list[str]:
    """Each ``table``/``table*`` environment of ``latex``, whole."""
    return [m.group(0) for m in re.finditer(r"\\begin\{(table\*?)\}.*?\\end\{\1\}", latex, flags=re.S)]
