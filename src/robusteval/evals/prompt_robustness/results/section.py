"""The report's prompt-robustness section: the runs of the three modes together (section id ``prompt-robustness``,
where a study's leaderboard links their cells).

* perturbed prompts: accuracy (%) with the clean prompt and each perturbed prompt, the PDR over every changed
  prompt, the PDR per method; the worst prompt of each run (its lowest accuracy) with its edits marked on the
  clean and the perturbed text, then every perturbed prompt likewise;
* adversarial prompt search: held-out accuracy with the clean and the found instruction, the drop and PDR, the
  queries spent; the found instruction with its edits marked;
* prompt spread: min / max / mean / spread / worst and best case per run with the prompt that wins, and the
  accuracy of every prompt (format) per run.

Every text of a run (prompts, edits, format choices) is shown as text: table cells are escaped and the browsers'
text blocks are rendered by the page's script without parsing them as HTML (:mod:`robusteval.report.highlight`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from robusteval.evals.prompt_robustness.results import numbers
from robusteval.evals.prompt_robustness.results.boards import describe
from robusteval.evals.prompt_robustness.results.numbers import CLEAN, FOUND
from robusteval.report.collect import Inputs, run_label, runs_browser
from robusteval.report.highlight import perturbation_marks, text_block
from robusteval.report.model import Block, Filter, Note, Num, Section, Table
from robusteval.runs import Run

PERTURB, SEARCH, SPREAD = "prompt-robustness", "prompt-robustness search", "prompt-robustness spread"
SECTION = "prompt-robustness"
#: What each piece of a surface is called on the page.
PIECES = {"instruction": "instruction", "format": "answer-format line", "system": "system turn"}


def _labels(runs: Sequence[Run]) -> list[str]:
    return [f"{run_label(run, runs)} · {(run.summary or {}).get('label_mode') or 'hard'} labels" for run in runs]


def _edit_pairs(originals: Mapping[str, Any], texts: Mapping[str, Any], edits: Mapping[str, Any],
                method: str | None) -> list[dict[str, Any]]:
    """One side-by-side block per piece: the clean text with the edited spans marked, the perturbed text with the
    replacements marked (each mark's tooltip: the method, the original span and its replacement)."""
    blocks = []
    for piece, original in originals.items():
        before, after = perturbation_marks(edits.get(piece) or [], method)
        name = PIECES.get(piece, piece)
        blocks.append({"pair": [[f"clean {name}", text_block(original, before)],
                                [f"perturbed {name}", text_block(texts.get(piece, original), after)]]})
    return blocks


def _edit_list(edits: Mapping[str, Any]) -> str:
    shown = [f"'{e.get('original')}' → '{e.get('replacement')}'" for piece in edits.values() for e in piece or ()]
    return "; ".join(shown) or "none"


# ------------------------------------------------------------------------------------------------------ perturb

def _prompt_item(run: Run, name: str, label: str, *, worst: bool) -> dict[str, Any]:
    summary = run.summary or {}
    entry = summary["prompts"][name]
    acc, clean, pdr = (numbers.perturb_accuracy(run, name), numbers.perturb_accuracy(run, CLEAN),
                       numbers.perturb_pdr(run, name))
    edits = entry.get("edits") or {}
    blocks = _edit_pairs((summary.get("clean_prompt") or {}).get("pieces") or {}, entry.get("pieces") or {}, edits,
                         entry.get("method"))
    blocks.append({"rows": [["accuracy", f"{acc.text()}% {acc.detail()}"],
                            ["clean prompt's accuracy", f"{clean.text()}% {clean.detail()}"],
                            ["PDR", f"{pdr.text()}% {pdr.detail()}"], ["edits", _edit_list(edits)]]})
    badges = [["worst prompt", "sr"]] if worst else []
    return {"title": f"{name} · {label}", "badges": [*badges, [str(entry.get("method")), "etype"]],
            "filters": {"method": str(entry.get("method")), "run": label},
            "search": " ".join(str(text) for text in (entry.get("pieces") or {}).values()), "blocks": blocks}


def _worst_items(run: Run, label: str) -> list[dict[str, Any]]:
    worst = numbers.worst_prompt(run.summary or {})
    return [_prompt_item(run, worst, label, worst=True)] if worst else []


def _all_items(run: Run, label: str) -> list[dict[str, Any]]:
    summary = run.summary or {}
    worst = numbers.worst_prompt(summary)
    prompts = summary.get("prompts") or {}
    ordered = sorted(numbers.changed_prompts(summary), key=lambda name: (prompts[name].get("acc") is None,
                                                                          prompts[name].get("acc") or 0.0))
    return [_prompt_item(run, name, label, worst=name == worst) for name in ordered]


def perturb_blocks(runs: Sequence[Run]) -> list[Block]:
    labels = _labels(runs)
    names = list(dict.fromkeys(name for run in runs for name in (run.summary or {}).get("prompts") or {}))
    methods = list(dict.fromkeys(m for run in runs for m in (run.summary or {}).get("methods") or {}))
    rows: list[list[Num | str]] = [
        [label, str((run.summary or {}).get("target")), str((run.summary or {}).get("n")),
         numbers.perturb_accuracy(run, CLEAN), *(numbers.perturb_accuracy(run, name) for name in names),
         numbers.perturb_pdr(run)] for run, label in zip(runs, labels, strict=True)]
    out: list[Block] = [
        Table("Accuracy (%) with the clean prompt and with each perturbed prompt, and the PDR (%) over every "
              "changed prompt", ["Run", "surface", "n", CLEAN, *names, "PDR"], rows,
              note="n: questions, each asked with every prompt (paired). PDR = 1 - A(perturbed)/A(clean) "
                   "(PromptBench), over every changed prompt it is the RB-index; paired bootstrap interval over "
                   "questions; lower is more robust. A prompt the method left unchanged is shown, not counted."),
        Table("PDR (%) per method, over its perturbed prompts", ["Run", *methods],
              [[label, *(numbers.perturb_pdr(run, method) for method in methods)]
               for run, label in zip(runs, labels, strict=True)])]

    def filters(items: list[dict[str, Any]]) -> list[Filter]:
        return [Filter("method", "Method", list(dict.fromkeys(i["filters"]["method"] for i in items)))]

    out.append(runs_browser("prompt-robustness-worst", "Worst perturbed prompt of each run (lowest accuracy), "
                            "its edits marked", runs, _worst_items, filters))
    out.append(runs_browser("prompt-robustness-prompts", "Every perturbed prompt, lowest accuracy first", runs,
                            _all_items, filters))
    return out


# ------------------------------------------------------------------------------------------------------- search

def _found_item(run: Run, label: str) -> list[dict[str, Any]]:
    summary = run.summary or {}
    clean = str(summary.get("clean_instruction") or "")
    edits = {"instruction": summary.get("edits") or []}
    blocks = _edit_pairs({"instruction": clean}, {"instruction": summary.get("found_instruction") or clean},
                         edits, None)
    found, before = numbers.search_accuracy(run, FOUND), numbers.search_accuracy(run, CLEAN)
    drop = numbers.search_drop(run)
    similarity = summary.get("similarity")
    blocks.append({"rows": [["held-out accuracy, found", f"{found.text()}% {found.detail()}"],
                            ["held-out accuracy, clean", f"{before.text()}% {before.detail()}"],
                            ["drop", f"{drop.text()}% {drop.detail()}"],
                            ["queries", f"{summary.get('queries')} of {summary.get('budget')} (searched on "
                                        f"{summary.get('search_size')} examples)"],
                            ["stopped", str(summary.get("stop_reason"))], ["edits", _edit_list(edits)],
                            *([["similarity to the clean instruction", str(similarity)]] if similarity else [])]})
    verdict = ["changed", "sr"] if summary.get("changed") else ["unchanged", "muted"]
    return [{"title": f"found instruction · {label}", "badges": [verdict], "filters": {"run": label},
             "search": str(summary.get("found_instruction")), "blocks": blocks}]


def search_blocks(runs: Sequence[Run]) -> list[Block]:
    labels = _labels(runs)
    rows: list[list[Num | str]] = []
    for run, label in zip(runs, labels, strict=True):
        summary = run.summary or {}
        rows.append([label, str(summary.get("search_size")), str((summary.get("held_out") or {}).get("n")),
                     f"{summary.get('queries')} of {summary.get('budget')}", str(summary.get("stop_reason")),
                     numbers.search_accuracy(run, CLEAN), numbers.search_accuracy(run, FOUND),
                     numbers.search_drop(run), numbers.search_drop(run, relative=True)])
    return [Table("Adversarial prompt search: held-out accuracy (%) with the clean and the found instruction",
                  ["Run", "searched on", "held out", "queries", "stopped", "clean", "found", "drop", "PDR"], rows,
                  note="The search lowers the accuracy on a seeded sample (searched on) within the query budget "
                       "(a query: one model call on one example with one candidate instruction); the found "
                       "instruction is scored on the other examples (held out, paired with the clean one)."),
            runs_browser("prompt-robustness-found", "Found adversarial instructions, their edits marked", runs,
                         _found_item, lambda items: [])]


# ------------------------------------------------------------------------------------------------------- spread

def prompt_order(name: str) -> tuple[bool, list[Any]]:
    """The template's own prompt first, then the others with their numbers in order (format2 before format10): a
    summary read back may hold its prompts sorted by name."""
    parts = re.split(r"(\d+)", name)
    return name != "original", [int(part) if part.isdigit() else part for part in parts]


def spread_blocks(runs: Sequence[Run]) -> list[Block]:
    labels = _labels(runs)
    rows: list[list[Num | str]] = []
    wins = []
    for run, label in zip(runs, labels, strict=True):
        summary = run.summary or {}
        best = summary.get("argmax")
        prompts = summary.get("prompts") or {}
        rows.append([label, str(summary.get("n")), str(summary.get("n_prompts")),
                     *(numbers.spread_number(run, key) for key in ("min", "max", "mean", "spread", "worst_case",
                                                                   "best_case")),
                     f"{best}: {describe(prompts.get(best))}", f"{summary.get('argmin')}: "
                     f"{describe(prompts.get(summary.get('argmin')))}"])
        wins.append(f"{label}: {best} wins")
    names = sorted(dict.fromkeys(name for run in runs for name in (run.summary or {}).get("prompts") or {}),
                   key=prompt_order)
    what: dict[str, str] = {}
    for run in runs:
        for name, entry in ((run.summary or {}).get("prompts") or {}).items():
            what.setdefault(name, describe(entry))
    per_prompt: list[list[Num | str]] = [[name, what[name], *(numbers.spread_accuracy(run, name) for run in runs)]
                                         for name in names]
    return [Table("Prompt spread: accuracy (%) over equivalent prompts and formats", ["Run", "n", "prompts", "min",
                  "max", "mean", "spread", "worst case", "best case", "wins (highest accuracy)", "loses (lowest)"],
                  rows, note="Worst case: the questions every prompt answers right; best case: some prompt does. "
                  "Spread = max - min with a paired bootstrap interval over questions; lower is more robust."),
            Table("Accuracy (%) of every prompt, per run", ["prompt", "what", *labels], per_prompt,
                  note="; ".join(wins) + ".")]


def section(inputs: Inputs) -> Section | None:
    """The section, or None when no finished run of any mode is given."""
    perturbed, searched, spread = (inputs.finished(command) for command in (PERTURB, SEARCH, SPREAD))
    if not (perturbed or searched or spread):
        return None
    out = Section(SECTION, "Robustness to the prompt",
                  "The questions stay as they are; the prompt changes: perturbed copies of one of its surfaces "
                  "(PromptBench's PDR), an adversarial instruction searched under a query budget, and the spread "
                  "over equivalent prompts and formats (FormatSpread). docs/prompt-robustness.md says how each is "
                  "computed.")
    for title, runs, blocks in (("Perturbed prompts", perturbed, perturb_blocks),
                                ("Adversarial prompt search", searched, search_blocks),
                                ("Prompt spread", spread, spread_blocks)):
        if runs:
            out.add(Note(f"{title} ({len(runs)} run{'s' if len(runs) > 1 else ''})"), *blocks(runs))
    return out
