"""`runs compare --format latex` compiles unedited with pdflatex and reads like a paper's table (issue 35 item 1):
escaped names, no internal columns, n and intervals in the paper's form, both denominators under the authors'
counting, a width that fits (table or table*), the pairwise tests as LaTeX (also via --pairwise FILE.tex)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from helpers.reportstores import DETERMINISTIC, authors_summary, denominator, matcha_store
from helpers.runs import cli_inproc
from helpers.tex import compile_tables, table_environments
from robusteval.report.latex import compare_latex, escape, pairwise_latex
from robusteval.report.latex_tex import Style, TexTable, render
from robusteval.report.model import Num

# Seven attacked examples under our counting, eight under the authors' (issue 35's 8 against 7).
OURS = denominator(4, 2, 1, "every attacked example with a clean reasoning after the answer")
AUTHORS = denominator(5, 2, 1, "every clean-correct question (the authors' code)")
KINDS = ["unsuccessful"] * 8 + ["success"] * 2 + ["wrong"] * 2
OTHER = ["unsuccessful"] * 3 + ["success"] * 7 + ["wrong"] * 2
#: A model name with every character LaTeX treats specially, and some it has no glyph for.
NASTY = "m_1 (50% & #2) {x}~^ é 模型 α≥β"


def _study(root: Path, counting: str) -> Path:
    """A 2-model study directory of MATCHA runs (study.json and <model>/matcha/synthetic runs)."""
    cells = []
    for name, kinds, seed in (("alpha_7b", KINDS, 1), ("beta-8b", OTHER, 2)):
        cell = f"{name}/matcha/synthetic"
        summary = {**authors_summary(OURS, AUTHORS), "flags": [DETERMINISTIC]} if counting == "authors" else None
        matcha_store(root / cell, 12, kinds=kinds, model_name=f"hf:/cache/{name}/model", seed=seed, summary=summary)
        cells.append({"cell": cell, "run_dir": str(root / cell), "status": "done", "error": "", "log": ""})
    (root / "study.json").write_text(json.dumps({"study": "s.toml", "title": "t", "models": ["alpha_7b", "beta-8b"],
                                                "cells": cells}), encoding="utf-8")
    return root


@pytest.fixture(scope="module", params=["ours", "authors"])
def study(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _study(tmp_path_factory.mktemp(f"latex-{request.param}") / "study", request.param)


def _rows(latex: str) -> list[str]:
    return [line for line in latex.splitlines() if line.endswith(r"\\") and "&" in line]


def test_escape_sets_every_special_and_unicode_character(tmp_path: Path) -> None:
    text = escape(NASTY + " <a|b> [c] \\ $")
    assert r"m\_1 (50\% \& \#2) \{x\}\textasciitilde{}\textasciicircum{}" in text
    assert r"\'{e}" in text and r"$\alpha$$\geq$$\beta$" in text and "[U+6A21]" in text
    assert "模" not in text and "α" not in text
    compile_tables(f"\\noindent {text}\n", tmp_path)


def test_a_two_model_study_compiles_and_reads_like_a_paper(study: Path, tmp_path: Path) -> None:
    latex = compare_latex([study], rename={"alpha_7b": NASTY})
    compile_tables(latex, tmp_path)
    tables = table_environments(latex)
    body = "\n".join(line for line in latex.splitlines() if not line.startswith("%"))  # comments keep names
    assert tables and not any(ord(c) > 127 for c in body)
    labels = re.findall(r"\\label\{(tab:[a-z0-9-]+)\}", latex)
    assert len(labels) == len(set(labels)) == len(tables)
    for table in tables:
        assert r"\toprule" in table and r"\bottomrule" in table
        headings = table.split(r"\toprule", 1)[1].split(r"\midrule", 1)[0]
        for internal in ("rank", "not ranked", "label", "run"):
            assert internal not in headings.lower(), (internal, headings)
    # Every number in the paper's form: value {\scriptsize[low, high]}; never "n=" in a cell.
    cells = [cell for row in _rows(latex) for cell in row.rstrip("\\ ").split(" & ")]
    assert any(re.fullmatch(r"\d+\.\d \{\\scriptsize\[\d+\.\d, \d+\.\d\]\}", c) for c in cells)
    assert not any("n=" in c for c in cells)
    # A significance table: the pair, the difference with its interval, n, p and Holm's p.
    assert "Pairwise tests: MATCHA" in latex and r"$p_{\mathrm{Holm}}$" in latex


def test_authors_counting_shows_both_denominators_each_with_its_rates(tmp_path: Path) -> None:
    study = _study(tmp_path / "study", "authors")
    latex = compare_latex([study])
    [table] = [t for t in table_environments(latex) if "MATCHA token-level attack" in t]
    rows = {tuple(row.split(" & ")[:2]): row.split(" & ") for row in _rows(table)}
    # Each model: a row over the authors' n (8) and a row over ours (7), each with its own UR (2 of 8, 2 of 7).
    authors = rows[(r"alpha\_7b$^{\dagger}$", "authors'")]
    ours = rows[("alpha\\_7b$^{\\dagger}$", "ours")]
    assert authors[4] == "8" and authors[5].startswith("62.5 ") and ours[4] == "7" and ours[5].startswith("57.1 ")
    assert "Counting: the authors' rules" in table and "every clean-correct question" in table
    assert "n\\_rated" not in table and r"$\dagger$ reasoning judged by deterministic" in table
    body = "\n".join(line for line in latex.splitlines() if not line.startswith("%"))
    assert "model" not in body.replace("Model", "")  # the study's names everywhere, pairwise notes included
    compile_tables(latex, tmp_path / "tex")


def test_pairwise_file_is_written_as_latex_or_csv_with_format_latex(study: Path, tmp_path: Path) -> None:
    tex, table = tmp_path / "pairs.tex", tmp_path / "tables.tex"
    done = cli_inproc("runs", "compare", str(study), "--format", "latex", "--output", str(table), "--pairwise", str(tex))
    assert done.returncode == 0, done.stderr
    assert f"pairwise tests as LaTeX to {tex}" in done.stderr
    pairs = tex.read_text(encoding="utf-8")
    assert pairs == pairwise_latex([study]) and "Pairwise tests" in pairs
    compile_tables(pairs, tmp_path / "pairs")
    compile_tables(table.read_text(encoding="utf-8"), tmp_path / "tables")
    as_csv = tmp_path / "pairs.csv"
    done = cli_inproc("runs", "compare", str(study), "--format", "latex", "--output", str(table), "--pairwise", str(as_csv))
    assert done.returncode == 0 and "as CSV" in done.stderr
    assert {row["model_a"] for row in csv.DictReader(as_csv.open(encoding="utf-8"))} == {"alpha_7b/model"}


def test_the_width_chooses_table_table_star_or_parts(tmp_path: Path) -> None:
    """Two numbers fit a column; six need the page; fourteen are split into parts that each fit."""
    def made(columns: int) -> str:
        rows = [[f"model_{i}", *(Num(0.123 + k / 100, n=40 + i, ci=(0.05, 0.31), percent=True)
                                 for k in range(columns))] for i in range(3)]
        return render(TexTable(f"A table of {columns}", ["Model", *(f"set {k}" for k in range(columns))], rows),
                      Style())

    one, page, wide = made(2), made(6), made(14)
    assert r"\begin{table}[t]" in one and r"\begin{table*}" in page and "(part 2 of" in wide
    assert "part" not in page and r"\begin{table*}" not in one
    assert "Model & $n$ & set 0 & set 1" in one  # n differs per row: a column of its own, once for both
    compile_tables("\n\n".join([one, page, wide]), tmp_path)


def test_every_method_compiles(all_runs: dict[str, Path], tmp_path: Path) -> None:
    """Real runs of every method (MATCHA and its baselines, transfer, VAR-MATH, perturbed benchmark,
    word importance, ORS): one file, compiled; the perturbed benchmark's sets one column each."""
    latex = compare_latex(list(all_runs.values()))
    compile_tables(latex, tmp_path)
    for caption in ("MATCHA token-level attack", "Baselines", "Transfer", "VAR-MATH", "Perturbed benchmarks",
                    "Hard-label attacks", "ORS", "Pairwise tests"):
        assert f"\\caption{{{caption}" in latex, caption
    assert "original 0/12" not in latex and "C-homophone 0/" not in latex
    [sets] = [t for t in table_environments(latex) if "on each perturbed set" in t]
    assert "Model & original & C-homophone & C-pinyin \\\\" in sets
    assert r"$\alpha$" in latex and "label\\_mode" not in latex


def test_a_study_leaderboard_is_a_table(tmp_path: Path) -> None:
    """The study's leaderboard.json (written by the study's own StudyLeaderboard) as one row per model, one
    column per number with its direction, each number's n where it differs between models in an n column."""
    from robusteval.report.latex_study import LEADERBOARD
    from robusteval.studies.leaderboard import JSON_NAME, Column, StudyLeaderboard

    assert LEADERBOARD == JSON_NAME
    study = _study(tmp_path / "study", "ours")
    board = StudyLeaderboard(["alpha_7b", "beta-8b"], [
        Column("eval:math_1:acc", "eval", "math_1", "acc", "higher", "n"),
        Column("matcha:math_1:ur", "matcha", "math_1", "ur", "higher", "n_attacked", note="50% of runs flagged")])
    for i, model in enumerate(board.models):
        board.cells[(model, "eval:math_1:acc")] = Num(0.5 + i / 10, n=20, ci=(0.3, 0.7), percent=True)
        board.cells[(model, "matcha:math_1:ur")] = Num(0.25, n=8 - i, ci=(0.07, 0.59), percent=True,
                                                        flags=("judged by arith only",))
    (study / JSON_NAME).write_text(json.dumps(board.to_dict()), encoding="utf-8")
    latex = compare_latex([study])
    [table] = [t for t in table_environments(latex) if "Study leaderboard" in t]
    assert r"ACC$\uparrow$ {\scriptsize($n$=20)}" in table and r"\multicolumn{2}{c}{matcha $\cdot$ math\_1}" in table
    assert r"alpha\_7b$^{\dagger}$ & 50.0 {\scriptsize[30.0, 70.0]} & 8 & 25.0" in table
    assert r"50\% of runs flagged" in table
    compile_tables(latex, tmp_path / "tex")
