"""``robusteval.report(run_dirs, out=...)``: one self-contained HTML page from any mix of runs.

Collect (:mod:`~robusteval.report.collect`) -> one section per method present (MATCHA with transfer and sweeps,
VAR-MATH, perturbed benchmarks, hard-label attacks with ORS) and the comparison across runs -> HTML
(:mod:`~robusteval.report.html`), written atomically. Reads runs without writing to them and imports no torch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from robusteval.config import path_list
from robusteval.errors import UserError
from robusteval.methods import method_of_command, methods
from robusteval.report.collect import Inputs, collect, nothing_to_show
from robusteval.report.model import Report, RunCard, Section
from robusteval.runs import Run


def _short(value: object, length: int = 12) -> str:
    text = str(value)
    return text[:length] if len(text) > length else text


def run_card(run: Run) -> RunCard:
    """The footer's account of a run: model, numeric setting, seeds, data and versions."""
    view = run.overview()
    fields = [("model", str(view["model"])), ("dtype", str(view["dtype"])), ("device", str(view["device"]))]
    if view["weights_sha256"]:
        fields.append(("weights", _short(view["weights_sha256"])))
    seeds = view["seeds"] or {}
    fields.append(("seeds", ", ".join(f"{k}={v}" for k, v in seeds.items()) or "none recorded"))
    data = run.identity.get("data_file") or run.identity.get("instances")
    if data:
        sha = run.identity.get("data_sha256") or run.identity.get("instances_sha256")
        fields.append(("data", f"{data}" + (f" (sha256 {_short(sha)})" if sha else "")))
    fields += [("versions", ", ".join(f"{k} {v}" for k, v in view["versions"].items()) or "not recorded")]
    if view["git_revision"]:
        fields.append(("git", str(view["git_revision"])))
    if view["gpu"]:
        fields.append(("gpu", str(view["gpu"])))
    if run.summary is None:
        fields.append(("state", "unfinished: no summary yet"))
    return RunCard(str(run.path), str(run.command), fields)


def run_cards(inputs: Inputs) -> list[RunCard]:
    cards = [run_card(run) for run in inputs.runs]
    for sweep in inputs.sweeps:
        data = sweep.data
        cards.append(RunCard(str(sweep.path), f"sweep {sweep.attack}", [
            ("grid", ", ".join(f"{k}={v}" for k, v in (data.get("grid") or {}).items()) or "none"),
            ("seeds", ", ".join(map(str, data.get("seeds") or ()))), ("models", ", ".join(data.get("models") or ())),
            ("runs", f"{len(sweep.runs)} of {len(data.get('runs') or ())} found")]))
        cards += [run_card(run) for run in sweep.runs]
    cards += [RunCard(str(result.path), result.kind, result.card()) for result in inputs.results]
    return cards


def section_of(command: object) -> str:
    """The id of the report section that shows a run of ``command`` ("" : none)."""
    spec = method_of_command(command)
    return spec.section if spec is not None else ""


def sections(inputs: Inputs) -> list[Section]:
    """Each registered method's section where it has runs (in the methods' order), then the comparison."""
    from robusteval.report.compare import comparison_section

    found = []
    for spec in methods():
        results = spec.load_results()
        if results is not None and results.section is not None:
            found.append(results.section(inputs))
    present = [s for s in found if s is not None]
    if not present:
        raise nothing_to_show(inputs, "report: nothing to show")
    return [*present, comparison_section(inputs)]


def build_report(run_dirs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
                 out: str | os.PathLike[str] = "report.html", *, title: str | None = None,
                 names: Mapping[str, str] | None = None, lead: Sequence[Section] = ()) -> Path:
    """Write the HTML report of ``run_dirs`` (run, sweep or ORS directories, or directories holding them) to
    ``out`` and return its path. ``names``: run directory -> the model name to show for it (a study's names);
    ``lead``: sections that open the page (a study's leaderboard)."""
    from robusteval._version import __version__
    from robusteval.report.html import render
    from robusteval.store import write_text_atomic

    target = Path(out)
    check_out(target)  # before any run is read: a bad --out is said at once
    inputs = collect(path_list(run_dirs, "report()"), names=names)
    report = Report(title or "robusteval report", [*lead, *sections(inputs)], run_cards(inputs), __version__)
    return write_text_atomic(target, render(report))


def check_out(target: Path) -> None:
    """A UserError unless the report can be written at ``target``: not a directory, and its nearest existing
    parent a directory this process may write in (missing directories below it are created)."""
    if target.is_dir():
        raise UserError(f"--out {target}: is a directory; give a file name such as {target / 'report.html'}")
    parent = target.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"--out {target}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UserError(f"--out {target}: cannot write in {parent} (permission denied); choose another --out")
