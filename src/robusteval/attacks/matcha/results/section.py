"""The MATCHA part of the report: the paper's tables and figures from MATCHA, transfer and sweep runs.

* Table 1/2 layout: ACC, UR, SR, WR per model x dataset, one table per level, with 95% intervals;
* Table 3 layout: the baselines (``--variant``) beside MATCHA, mean(std) over seeds where runs repeat;
* Fig. 2: transfer rate per target model; Fig. 3: error types of the successes; Fig. 4: sweep curves;
* per run, why questions were not attacked (:mod:`robusteval.attacks.matcha.results.reasons`);
* the example browser (:mod:`robusteval.attacks.matcha.results.examples`).

Every number is read from a summary (``summary.json`` / ``sweep.json``), never recomputed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.attacks.matcha.results.commands import MATCHA, TRANSFER
from robusteval.attacks.matcha.results.examples import matcha_browser
from robusteval.attacks.matcha.results.reasons import not_attacked_table
from robusteval.judges.errortypes import CATEGORIES
from robusteval.metrics.matcha import MATCHA_RATES
from robusteval.metrics.matcha_summary import (
    among_judged,
    categories_text,
    counting,
    denominator_name,
    denominators,
    flag_texts,
    flags_line,
    headline_denominator,
    headline_n,
    rates_over,
)
from robusteval.metrics.stats import mean_std, wilson_interval
from robusteval.report.collect import Inputs, dataset_name, model_name, run_label, short_model
from robusteval.report.model import BarChart, Details, Line, LineChart, Note, Num, Section, Table
from robusteval.runs import Run

METRICS = MATCHA_RATES
#: The categories beside UR/SR/WR that make the attacked examples add up (answer kept: unjudged; clean
#: reasoning already judged wrong), each a share of the same n.
OTHER_CATEGORIES = ("unjudged_rate", "clean_cot_wrong_rate")
#: Table 1/2's columns per dataset: ACC, then every category of the attacked examples.
TABLE_METRICS = (*METRICS, *OTHER_CATEGORIES)
LABELS = {"acc": "ACC", "ur": "UR", "sr": "SR", "wr": "WR", "unjudged_rate": "unjudged",
          "clean_cot_wrong_rate": "clean wrong"}
#: Table 3's rows, in the paper's order, with its names: one per ``attacks.matcha.config.VARIANTS`` (a test
#: pins the two together).
VARIANT_NAMES = {"random-insert": "Random insertion", "gcg-suffix": "GCG-style suffix",
                 "random-locs": "MATCHA, random locations", "cot-loss-only": "MATCHA, L_c only", "full": "MATCHA"}
#: Fig. 3's categories, in the classifier's order.
ERROR_TYPES = CATEGORIES


#: What each success rule (``--success-check``) means; runs made before the option have none: ``final``.
SUCCESS_RULES = {"final": "judged once, after the last replacement step (the paper's text)",
                 "insertion-and-final": "judged right after the random insertions too, stopping there on a success "
                                        "or a changed answer (the authors' implementation, which made the published "
                                        "tables)"}


def rate(summary: dict[str, Any], name: str, run: Run) -> Num:
    """ACC over all examples; UR/SR/WR and the other categories over the headline denominator (every attacked
    question, ``n_attacked``; summaries made before: ``n_rated``, the judged ones), with the summary's interval
    and the run's flags."""
    if name == "acc":
        return Num(summary.get(name), n=summary.get("n"), ci=(summary.get("ci95") or {}).get(name),
                   runs=(str(run.path),), percent=True, note="n = all questions")
    headline = denominators(summary).get(headline_denominator(summary)) or {}
    return Num(summary.get(name), n=headline_n(summary), ci=(summary.get("ci95") or {}).get(name),
               runs=(str(run.path),), percent=True, note=denominator_note(headline_denominator(summary), headline,
                                                                          summary),
               flags=flag_texts(summary))


def denominator_note(name: str, denominator: Mapping[str, Any], summary: Mapping[str, Any] | None = None) -> str:
    """What a rate's n counts: ``n_attacked = every attacked question (...)`` (``authors' n_attacked = every
    clean-correct ...``; a summary made before: ``n_rated = attacked questions the judge decided ...``)."""
    over = rates_over(summary or {})
    if over == "n_rated":
        definition = ("attacked questions whose reasoning the judge decided and whose clean reasoning it accepts "
                      "(a run made before every attacked question was the denominator)")
    else:
        definition = str(denominator.get("definition") or "every attacked question")
    outcomes = categories_text(denominator or summary or {})
    shown = f"{over} = {definition}" + (f"; outcomes: {outcomes}" if outcomes else "")
    return f"{denominator_name(name)} {shown}" if denominator else shown


def denominator_rate(summary: dict[str, Any], name: str, denominator: str, run: Run) -> Num:
    """UR/SR/WR (or another category) over one of the run's ``denominators`` (under the authors' counting:
    ``"authors"`` or ``"ours"``), with its n, interval and definition, and the run's flags."""
    chosen = denominators(summary).get(denominator) or {}
    return Num(chosen.get(name), n=chosen.get("n"), ci=(chosen.get("ci95") or {}).get(name), runs=(str(run.path),),
               percent=True, note=denominator_note(denominator, chosen, summary), flags=flag_texts(summary))


def judged_rate(summary: Mapping[str, Any], name: str, run: Run) -> Num:
    """UR/SR/WR among the judged answers only (the secondary view ``among_judged``), labelled as such; no value
    for a summary made before it (its headline is that view)."""
    judged = among_judged(summary) or {}
    return Num(judged.get(name), n=judged.get("n"), ci=(judged.get("ci95") or {}).get(name), runs=(str(run.path),),
               percent=True, note="secondary view, n_judged = " + str(judged.get("definition") or "?"))


def success_rule(run: Run) -> str:
    """The run's ``--success-check`` (``final`` for runs made before the option, and for the embedding level)."""
    summary = run.summary or {}
    return str(summary.get("success_check") or (summary.get("hyperparameters") or {}).get("success_check")
               or "final")


def run_level(run: Run) -> str:
    return str((run.summary or {}).get("level") or (run.identity.get("config") or {}).get("level") or "token")


def run_variant(run: Run) -> str:
    return str((run.summary or {}).get("variant") or (run.identity.get("config") or {}).get("variant") or "full")


def transfer_source(run: Run) -> str:
    """Where a transfer run's attacks came from: the source model and dataset."""
    summary = run.summary or {}
    return f"{short_model(str(summary.get('source_model') or '?'))} · {summary.get('source_dataset')}"


def transfer_denominator(summary: dict[str, Any]) -> str:
    """What a transfer run's rates are over: the questions answered correctly originally (``n_original_correct``,
    unjudged ones a category of their own), or for runs made before, those with a verdict (``n_rated``)."""
    return rates_over(summary)


def transfer_rate(run: Run) -> Num:
    """Successes among the transferred questions the target answers correctly, with the summary's interval."""
    summary = run.summary or {}
    return Num(summary.get("transfer_rate"), n=summary.get(transfer_denominator(summary)),
               ci=summary.get("transfer_rate_ci95"), runs=(str(run.path),), percent=True)


def _decided(run: Run) -> str:
    """How many attacked questions each checkpoint decided (the summary's ``decided_at``), as words."""
    counts = (run.summary or {}).get("decided_at") or {}
    return ", ".join(f"{counts[k]} at the {k} check" for k in ("insertion", "final") if counts.get(k) is not None)


def results_tables(runs: Sequence[Run]) -> list[Table]:
    """Table 1 (token level) and Table 2 (embedding level): rows are models (token level: per success rule, which
    decides what counts as a success), column groups datasets."""
    tables = []
    for level in ("token", "embedding"):
        chosen = [r for r in runs if run_level(r) == level and run_variant(r) == "full" and r.summary]
        if not chosen:
            continue
        datasets = list(dict.fromkeys(dataset_name(r) for r in chosen))
        rows: dict[tuple[str, str], dict[str, Run]] = {}
        for run in chosen:
            # Runs of the authors' counting get rows of their own: their rates are not ours.
            model = model_name(run) + (" · authors' counting" if counting(run.summary or {}) == "authors" else "")
            rule = success_rule(run) if level == "token" else "final"
            key = (model if dataset_name(run) not in rows.get((model, rule), {}) else f"{model} ({run.path.name})",
                   rule)
            rows.setdefault(key, {})[dataset_name(run)] = run
        body = []
        for (model, rule), by_dataset in rows.items():
            cells: list[Num | str] = [model, rule] if level == "token" else [model]
            for dataset in datasets:
                found = by_dataset.get(dataset)
                cells += [rate(found.summary or {}, m, found) if found else "" for m in TABLE_METRICS]
            body.append(cells)
        number = "1" if level == "token" else "2"
        lead = [("", 2)] if level == "token" else [("", 1)]
        note = ""
        if level == "token":
            used = list(dict.fromkeys(rule for _, rule in rows))
            decided = [f"{run_label(r, chosen)}: {_decided(r)}" for r in chosen
                       if success_rule(r) != "final" and _decided(r)]
            note = ("Success check: " + "; ".join(f"{rule}: {SUCCESS_RULES.get(rule, rule)}" for rule in used)
                    + (". Rows under different success checks are not comparable." if len(used) > 1 else ".")
                    + (" Decided: " + "; ".join(decided) + "." if decided else ""))
        if any(counting(r.summary or {}) == "authors" for r in chosen):
            note = (note + " " if note else "") + COUNTING_NOTE
        if any(rates_over(r.summary or {}) == "n_rated" for r in chosen):
            note = (note + " " if note else "") + OLD_NOTE
        tables.append(Table(
            f"{level.capitalize()}-level attack (paper Table {number} layout): ACC over all questions; UR, SR, WR, "
            "unjudged and clean wrong (%) over every attacked question (n_attacked: no judge decision shrinks it; "
            "they sum to 100)",
            ["Model", *(["Success check"] if level == "token" else []),
             *(LABELS[m] for _ in datasets for m in TABLE_METRICS)],
            body, groups=[*lead, *((d, len(TABLE_METRICS)) for d in datasets)], note=note))
    return tables


#: Under Table 1/2 when a run's summary was made before every attacked question was the denominator.
OLD_NOTE = ("Runs made before rates were over every attacked question show UR, SR and WR over n_rated (the judged "
            "ones only; their unjudged and clean-wrong cells are empty): abstentions left out inflate their WR.")
#: Under Table 1/2 when a row uses the authors' counting.
COUNTING_NOTE = ("Rows marked \"authors' counting\" count outcomes by the authors' rules: UR, SR and WR over the "
                 "authors' denominator (both denominators, each with its n and interval, in the table \"Both "
                 "denominators\"); they are not comparable with the other rows.")


def denominators_table(runs: Sequence[Run]) -> Table | None:
    """Under the authors' counting, each run's UR/SR/WR over both denominators (the headline first), each with
    its n, interval and definition; None when no run used it."""
    chosen = [r for r in runs if r.summary and counting(r.summary) == "authors" and denominators(r.summary)]
    if not chosen:
        return None
    rows: list[list[Num | str]] = []
    for run in chosen:
        summary = run.summary or {}
        headline = headline_denominator(summary)
        for name, denominator in denominators(summary).items():
            rows.append([run_label(run, chosen), denominator_name(name) + (" (headline)" if name == headline else ""),
                         str(denominator.get("definition") or "?"), str(denominator.get("n")),
                         *(denominator_rate(summary, m, name, run) for m in ("ur", "sr", "wr", *OTHER_CATEGORIES)),
                         categories_text(denominator)])
    return Table("Both denominators (runs under the authors' counting): UR, SR, WR, unjudged and clean wrong (%) "
                 "over the authors' denominator and over ours, each with its n and 95% interval",
                 ["Run", "denominator", "what n counts", "n", "UR", "SR", "WR", "unjudged", "clean wrong",
                  "outcomes (sum to n)"], rows)


def among_judged_table(runs: Sequence[Run]) -> Table | None:
    """The secondary view: each run's UR/SR/WR among the judged answers only (abstentions and clean reasonings
    judged wrong left out), with its n; None when no run holds it."""
    chosen = [r for r in runs if r.summary and among_judged(r.summary)]
    if not chosen:
        return None
    rows: list[list[Num | str]] = [[run_label(run, chosen), str((among_judged(run.summary or {}) or {}).get("n")),
                                    *(judged_rate(run.summary or {}, m, run) for m in ("ur", "sr", "wr"))]
                                   for run in chosen]
    return Table("Secondary view, not the headline: UR, SR and WR (%) among the judged answers only (n_judged: "
                 "attacked questions the judge decided; its abstentions move this n)", ["Run", "n_judged", "UR", "SR",
                                                                                        "WR"], rows)


def flags_note(runs: Sequence[Run]) -> Note | None:
    """One line per flagged run (its rates carry the same flags as badges): ``run: ⚑ ...; ⚑ ...``."""
    lines = [f"{run_label(run, runs)}: {flags_line(run.summary or {})}" for run in runs
             if run.summary and flags_line(run.summary)]
    if not lines:
        return None
    return Note("Flagged runs (their UR, SR and WR are weaker evidence than they look): " + " · ".join(lines),
                css="note flagged")


def outcome_chart(runs: Sequence[Run]) -> BarChart | None:
    chosen = [r for r in runs if r.summary and headline_n(r.summary)]
    if not chosen:
        return None
    groups = [f"{run_label(r, chosen)} · {run_level(r)}" + ("" if run_variant(r) == "full" else f" · {run_variant(r)}")
              for r in chosen]
    shown = ("ur", "sr", "wr", *OTHER_CATEGORIES)
    values = {(g, LABELS[m]): rate(r.summary or {}, m, r) for g, r in zip(groups, chosen, strict=True)
              for m in shown}
    return BarChart("Attack outcomes per run (UR: answer and reasoning kept; SR: answer kept, reasoning broken; "
                    "WR: answer changed; unjudged: answer kept, no verdict; clean wrong: answer kept, clean reasoning "
                    "already judged wrong)", groups, [LABELS[m] for m in shown], values,
                    y_label="% of attacked questions")


def _settings(run: Run) -> tuple[Any, ...]:
    """What makes two runs repeats of one experiment: every setting but the seed (and the variant, which is
    Table 3's row), and the number of questions."""
    summary = run.summary or {}
    hyper = dict(summary.get("hyperparameters") or {})
    for name in ("seed", "variant"):
        hyper.pop(name, None)
    hyper["questions"] = summary.get("n")
    return tuple(sorted((k, str(v)) for k, v in hyper.items()))


def baselines_table(runs: Sequence[Run]) -> Table | Note:
    """Table 3: each variant's UR and SR per model x dataset, mean(std) over runs that differ only by seed."""
    done = [r for r in runs if r.summary]
    if not any(run_variant(r) != "full" for r in done):
        return Note("No baseline runs were given: run `robusteval attack matcha --variant random-insert` (or "
                    "random-locs, cot-loss-only, gcg-suffix) beside the full attack, or sweep over --grid "
                    "variant=..., to fill the paper's Table 3.")
    columns = list(dict.fromkeys((model_name(r), dataset_name(r), run_level(r)) for r in done))
    groups: dict[tuple[Any, ...], list[Run]] = {}
    settings_of = [_settings(run) for run in done]
    for run, settings in zip(done, settings_of, strict=True):
        groups.setdefault((run_variant(run), settings, (model_name(run), dataset_name(run), run_level(run))),
                          []).append(run)
    # The setting most runs share (counted once per run, not by comparing every setting with every run).
    common = Counter(settings_of).most_common(1)[0][0]
    row_keys = sorted({(v, s) for v, s, _ in groups},
                      key=lambda k: (list(VARIANT_NAMES).index(k[0]) if k[0] in VARIANT_NAMES else 99, k[1]))
    body = []
    for variant, settings in row_keys:
        differs = ", ".join(f"{k}={v}" for k, v in settings if (k, v) not in common)
        label = VARIANT_NAMES.get(variant, variant) + (f" ({differs})" if differs else "")
        cells: list[Num | str] = [label]
        for column in columns:
            members = groups.get((variant, settings, column), [])
            for metric in ("ur", "sr"):
                if not members:
                    cells.append("")
                    continue
                mean, std = mean_std([(m.summary or {}).get(metric) for m in members])
                seeds = sorted({(m.summary or {}).get("seeds", {}).get("seed") for m in members}, key=str)
                rated = [headline_n(m.summary or {}) for m in members]
                single = rate(members[0].summary or {}, metric, members[0]) if len(members) == 1 else None
                cells.append(Num(mean, std=std, percent=True, runs=tuple(str(m.path) for m in members),
                                 note=f"{len(members)} run(s), seeds {', '.join(map(str, seeds))}",
                                 n=rated[0] if single else None, ci=single.ci if single else None,
                                 basis=f"{len(members)} seeds, n={'/'.join(map(str, rated))}"))
        body.append(cells)
    return Table("Baselines (paper Table 3 layout): UR and SR (%), mean (std) over seeds where runs repeat",
                 ["Method", *("UR" if i % 2 == 0 else "SR" for i in range(2 * len(columns)))], body,
                 groups=[("", 1), *((f"{m} · {d} · {lv}", 2) for m, d, lv in columns)])


def transfer_blocks(runs: Sequence[Run]) -> list[Any]:
    done = [r for r in runs if r.summary]
    if not done:
        return [Note("No transfer runs were given (`robusteval transfer --from MATCHA_RUN --model ...` replays a "
                     "run's successes on another model; paper Fig. 2).")]
    sources = [transfer_source(r) for r in done]
    targets = [model_name(r) for r in done]
    values = {}
    rows: list[list[Num | str]] = []
    for run, source, target in zip(done, sources, targets, strict=True):
        summary = run.summary or {}
        num = transfer_rate(run)
        values[(source, target)] = num
        rows.append([source, target, str(summary.get("n_source_successes")), str(summary.get("n_transferred")),
                     str(summary.get("n_original_correct")), num,
                     *(Num(summary.get(m), n=summary.get(transfer_denominator(summary)),
                           ci=(summary.get("ci95") or {}).get(m), runs=(str(run.path),), percent=True)
                       for m in ("ur", "sr", "wr", "unjudged_rate")), categories_text(summary)])
    table = Table("Transfer runs: every rate over the transferred questions the target answers correctly originally "
                  "(target correct; unjudged answers a category of their own)",
                  ["Source", "Target", "source successes", "transferred", "target correct", "transfer rate %", "UR",
                   "SR", "WR", "unjudged", "outcomes (sum to n)"], rows)
    if all(num.value is None for num in values.values()):
        return [Note("No transfer rate to draw (paper Fig. 2): the target models answered none of the transferred "
                     "questions correctly in their original form, or there was nothing to transfer."), table]
    chart = BarChart("Transfer rate per target model (paper Fig. 2): successes among the transferred questions "
                     "the target answers correctly", list(dict.fromkeys(sources)), list(dict.fromkeys(targets)),
                     values, y_label="transfer rate %")
    return [chart, table]


def error_type_blocks(runs: Sequence[Run]) -> list[Any]:
    """Fig. 3: how the successes' reasoning went wrong, per run (summaries' ``error_types``)."""
    found = [r for r in runs if r.summary and (r.summary.get("error_types") or {}).get("n")]
    if not found:
        return [Note("No error types were recorded: none of these runs' successes carries an error type "
                     "(runs made before robusteval classified errors, or runs without successes).")]
    categories = [c for c in ERROR_TYPES if any((r.summary or {})["error_types"].get("counts", {}).get(c)
                                                for r in found)]
    values = {}
    for run in found:
        types = (run.summary or {})["error_types"]
        for category in categories:
            count = types.get("counts", {}).get(category, 0)
            total = types.get("n")
            values[(run_label(run, found), category)] = Num(
                (types.get("shares") or {}).get(category), n=total, runs=(str(run.path),), percent=True,
                ci=wilson_interval(count, total) if isinstance(count, int) and isinstance(total, int) else None,
                note=f"{count} of {total} successes")
    return [BarChart("Error types of the successful attacks (paper Fig. 3)", [run_label(r, found) for r in found],
                     categories, values, y_label="% of successes")]


def sweep_blocks(inputs: Inputs) -> list[Any]:
    sweeps = [s for s in inputs.sweeps if s.attack == "matcha"]
    if not sweeps:
        return [Note("No sweeps were given (`robusteval sweep matcha --grid steps=1,3,5` or "
                     "insert_ratio=0.1,0.2,0.4; paper Fig. 4).")]
    blocks: list[Any] = []
    for sweep in sweeps:
        grid = sweep.data.get("grid") or {}
        table = sweep.data["table"]
        for name, values in grid.items():
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                continue
            lines: dict[str, list[tuple[float, Num]]] = {}
            for row in table:
                point = row.get("point") or {}
                at = point.get(name)
                if not isinstance(at, int | float) or isinstance(at, bool):
                    continue
                others = ", ".join(f"{k}={v}" for k, v in point.items() if k != name)
                for metric in ("ur", "sr"):
                    stat = row.get(metric) or {}
                    label = f"{LABELS[metric]} · {short_model(str(row.get('model')))}" + (f" ({others})" if others
                                                                                         else "")
                    lines.setdefault(label, []).append((float(at), Num(
                        stat.get("mean"), std=stat.get("std"), percent=True, runs=(str(sweep.path),),
                        note=f"mean (std) over {row.get('n_seeds')} seed(s)", basis=f"{row.get('n_seeds')} seeds")))
            blocks.append(LineChart(f"UR and SR against {name} (paper Fig. 4), mean and std over seeds",
                                    name, "% of rated questions", [Line(k, v) for k, v in lines.items()]))
        rows: list[list[Num | str]] = [[short_model(str(row.get("model"))), ", ".join(f"{k}={v}" for k, v in (row.get("point") or {}).items())
                 or "default", str(row.get("n_seeds")),
                 *(Num((row.get(m) or {}).get("mean"), std=(row.get(m) or {}).get("std"), percent=True,
                       runs=(str(sweep.path),), basis=f"{row.get('n_seeds')} seeds") for m in METRICS)]
                for row in table]
        blocks.append(Table(f"Sweep {sweep.path}: mean (std) over seeds", ["Model", "Setting", "seeds",
                                                                           *(LABELS[m] for m in METRICS)], rows))
    return blocks


def notes_block(runs: Sequence[Run]) -> Details | None:
    lines = []
    for run in runs:
        summary = run.summary or {}
        for note in summary.get("notes") or ():
            lines.append(f"{run.path}: {note}")
        deviations = summary.get("deviations_from_paper") or ()
        if deviations:
            lines.append(f"{run.path}: differs from the paper's setting: " + "; ".join(deviations))
    return Details("Notes and deviations from the paper's setting", lines) if lines else None


def matcha_section(inputs: Inputs) -> Section | None:
    runs = inputs.all_runs(MATCHA)
    direct = inputs.of(MATCHA)
    transfers = inputs.all_runs(TRANSFER)
    sweeps = [s for s in inputs.sweeps if s.attack == "matcha"]
    if not (runs or transfers or sweeps):
        return None
    section = Section("matcha", "MATCHA: answers kept, reasoning broken",
                      "Token- and embedding-level perturbations that try to keep a model's answer while breaking "
                      "its chain of thought. Under each number: its 95% interval in brackets and n, the count it is "
                      "a share of; hover it for the exact value and its run.")
    section.add(*results_tables(direct))
    extra = [flags_note([r for r in direct if r.summary]), denominators_table(direct), among_judged_table(direct)]
    section.add(*(block for block in extra if block is not None))
    chart = outcome_chart(direct)
    if chart is not None:
        section.add(chart)
    details = notes_block(direct)
    if details is not None:
        section.add(details)
    done = [r for r in direct if r.summary]
    section.add(*(not_attacked_table(run, run_label(run, done)) for run in done))
    section.add(baselines_table(runs), *transfer_blocks(transfers), *error_type_blocks(runs + transfers),
                *sweep_blocks(inputs))
    section.add(matcha_browser(direct))
    return section
