"""The word-importance attack's report section (``hardlabel``): attack success rate against the perturbation rate per method and
model, queries per success, the ORS table with its beta, and the adversarial examples with their edits."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.attacks.wordimportance.pipeline import COMMAND, STAGE
from robusteval.attacks.wordimportance.results.ors import OrsResult, ors_results, ors_score
from robusteval.metrics.stats import wilson_interval
from robusteval.report.collect import Inputs, model_name, runs_browser, short_model
from robusteval.report.highlight import perturbation_marks, text_block
from robusteval.report.model import Filter, Line, LineChart, Note, Num, Section, Table
from robusteval.report.reasons import NotAttacked, not_attacked, not_attacked_table
from robusteval.runs import Run

#: Why the attack skips an example: the model's label on the original is wrong, or none could be read.
NO_ORIGINAL_LABEL = "no label read from the model's answer on the original"
ORIGINAL_WRONG = "the model already labels the original wrongly"


def wordimportance_skip_reason(record: Mapping[str, Any]) -> str | None:
    """Why a word-importance record was not attacked (None when it was)."""
    if record.get("status") != "skipped":
        return None
    return NO_ORIGINAL_LABEL if record.get("original_label") is None else ORIGINAL_WRONG


def skipped_from_records(run: Run) -> NotAttacked:
    """The run's stored records not attacked, by reason (for a summary that does not count them)."""
    rows = run.records(STAGE) if STAGE in run.stages else []
    skipped = Counter(reason for row in rows if (reason := wordimportance_skip_reason(row)) is not None)
    return NotAttacked(dict(skipped.most_common()), {}, "records")


def _rates(run: Run) -> list[str]:
    return sorted(((run.summary or {}).get("by_rate") or {}), key=float)


def success_rate(run: Run, rate: str) -> Num:
    """The summary's success rate at ``rate``; n and the Wilson interval from its success and failure counts."""
    entry = ((run.summary or {}).get("by_rate") or {}).get(rate) or {}
    wins, failed = entry.get("n_success") or 0, entry.get("n_failed") or 0
    return Num(entry.get("attack_success_rate"), n=wins + failed, ci=wilson_interval(wins, wins + failed),
               runs=(str(run.path),), percent=True, note=f"{wins} successes, {entry.get('n_skipped')} skipped")


def queries_per_success(run: Run, rate: str) -> Num:
    entry = ((run.summary or {}).get("by_rate") or {}).get(rate) or {}
    return Num(entry.get("avg_queries_per_success"), n=entry.get("n_success"), runs=(str(run.path),),
               note="mean queries of the successful attacks")


def top_rate(run: Run) -> str | None:
    """The largest perturbation rate α the run attacked at (the leaderboards rank by it)."""
    rates = _rates(run)
    return rates[-1] if rates else None


def method_name(run: Run) -> str:
    summary = run.summary or {}
    return str(summary.get("method") or "+".join(summary.get("methods") or ()) or "?")


def curves(runs: Sequence[Run]) -> LineChart:
    lines = [Line(f"{model_name(run)} · {method_name(run)}", [(float(rate), success_rate(run, rate))
                                                         for rate in _rates(run)]) for run in runs]
    return LineChart("Attack success rate against the perturbation rate α (per method and model)",
                     "perturbation rate α", "attack success rate %", lines)


def attack_table(runs: Sequence[Run]) -> Table:
    rates = sorted({rate for run in runs for rate in _rates(run)}, key=float)
    rows = []
    for run in runs:
        summary = run.summary or {}
        cells: list[Num | str] = [model_name(run), method_name(run), str(summary.get("budget")), str(summary.get("n")),
                                  str(summary.get("n_skipped"))]
        for rate in rates:
            cells += [success_rate(run, rate), queries_per_success(run, rate)]
        rows.append(cells)
    return Table("Hard-label word-importance attacks: success rate (%) and queries per success at each α",
                 ["Model", "Method", "budget", "n", "skipped", *(c for _ in rates for c in ("ASR %", "queries/success"))],
                 rows, groups=[("", 5), *((f"α = {rate}", 2) for rate in rates)])


def ors_tables(results: Sequence[OrsResult]) -> list[Any]:
    if not results:
        return [Note("No ORS result was given (`robusteval ors RUN_DIR... --out DIR` scores models from their "
                     "word-importance runs; give DIR here).")]
    tables: list[Any] = []
    for result in results:
        data = result.data
        methods = sorted({m for by_method in (data.get("rs") or {}).values() for m in by_method})
        runs = data.get("runs") or {}
        rows = []
        for model in data.get("ors") or {}:
            cells: list[Num | str] = [short_model(model)]
            for method in methods:
                percent = (data.get("success_percent") or {}).get(model, {}).get(method)
                cells.append(Num((data.get("rs") or {}).get(model, {}).get(method), digits=2,
                                 runs=(str(runs.get(model, {}).get(method, result.path)),),
                                 note=f"success % per α {percent}; OAD {(data.get('oad') or {}).get(model, {}).get(method)}"))
            cells.append(ors_score(result, model))
            rows.append(cells)
        tables.append(Table(f"ORS (β = {data.get('beta')}, q = {data.get('q')}, η = {data.get('eta')}; rs per "
                            "method, higher is more robust)", ["Model", *methods, "ORS"], rows,
                            note=" ".join(str(part) for part in (data.get("note"), *(data.get("warnings") or ()))
                                          if part)))
    return tables


def _adversarial_item(record: Mapping[str, Any], label: str) -> dict[str, Any]:
    status = str(record.get("status"))
    blocks: list[dict[str, Any]] = []
    edits = record.get("edits") or {}
    for key, original in (record.get("original") or {}).items():
        before, after = perturbation_marks(edits.get(key))
        name = "question" if key == "text" else key
        blocks.append({"pair": [[f"original {name}", text_block(original, before)],
                                [f"adversarial {name}", text_block((record.get("adversarial") or {}).get(key), after)]]})
    per_rate = ", ".join(f"α {rate}: {'success' if v.get('success') else 'no'} ({v.get('queries')} queries)"
                         for rate, v in (record.get("per_rate") or {}).items())
    blocks.append({"rows": [["label", f"gold {record.get('label')}; original prediction {record.get('original_label')}"
                             f" → final {record.get('final_label')} (confidence {record.get('final_confidence')})"],
                            ["queries", str(record.get("queries"))],
                            ["perturbed words", f"{record.get('perturbed_words')} of {record.get('n_words')}"],
                            ["per rate", per_rate or "-"], ["stopped", str(record.get("stop_reason"))]]})
    css = {"success": "sr", "failed": "ur"}.get(status, "muted")
    return {"title": f"{record.get('id')} · {label}", "badges": [[status, css]],
            "filters": {"status": status, "run": label},
            "search": " ".join(str(v) for v in (record.get("original") or {}).values()), "blocks": blocks}


def adversarial_items(run: Run, label: str) -> list[dict[str, Any]]:
    if STAGE not in run.stages:
        return []
    return [_adversarial_item(r, label) for r in run.records(STAGE) if r.get("status") != "skipped"]


def wordimportance_section(inputs: Inputs) -> Section | None:
    runs = inputs.finished(COMMAND)
    ors = ors_results(inputs.results)
    if not (runs or ors):
        return None
    section = Section("hardlabel", "Hard-label attacks and ORS",
                      "Word-importance attacks that only see the predicted label: words ranked by how much deleting "
                      "them moves the model, then perturbed in that order until the label flips or α of the words "
                      "are used.")
    if runs:
        section.add(curves(runs), attack_table(runs))
        # Only where some example was left out: most runs attack every example the model gets right.
        counted = [(run, not_attacked(run, skipped_from_records)) for run in runs]
        section.add(*(not_attacked_table(run, f"{model_name(run)} · {method_name(run)}", found)
                      for run, found in counted if found.any))
    section.add(*ors_tables(ors))

    def filters(items: list[dict[str, Any]]) -> list[Filter]:
        statuses = sorted({i["filters"]["status"] for i in items}, key=lambda s: (s != "success", s))
        return [Filter("status", "Attack", statuses)]

    section.add(runs_browser("hardlabel-examples", "Adversarial examples", runs, adversarial_items, filters))
    return section
