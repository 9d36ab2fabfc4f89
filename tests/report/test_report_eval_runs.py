"""``robusteval report`` on a directory that holds only answer-first eval runs shows them: each run's accuracy
with its n and 95% interval (it said "nothing to show")."""

from __future__ import annotations

import html
import re
from pathlib import Path

import robusteval as rv
from helpers.runs import cli_inproc
from robusteval.models.generation import GenerationOptions

QUESTIONS = "".join(f'{{"id": "q{i}", "question": "What is {i} + {i}?", "answer": "{2 * i}"}}\n' for i in range(4))


def test_a_folder_of_eval_runs_reports_their_accuracy_with_n_and_interval(tiny_llama_dir: Path,
                                                                          tmp_path: Path) -> None:
    data_file = tmp_path / "q.jsonl"
    data_file.write_text(QUESTIONS, encoding="utf-8")
    config = rv.EvalConfig(rv.DataSpec("jsonl", data_file, answer_type="number"),
                           generation=GenerationOptions(max_new_tokens=4))
    summary = rv.evaluate(config, rv.load_model(f"hf:{tiny_llama_dir}"), tmp_path / "runs" / "eval")
    result = cli_inproc("report", str(tmp_path / "runs"), "--out", str(tmp_path / "report.html"))
    assert result.returncode == 0, result.stderr[-2000:]
    page = html.unescape((tmp_path / "report.html").read_text(encoding="utf-8"))
    section = page[page.index('<section id="evals">'):]
    section = " ".join(re.sub(r"<[^>]+>", " ", section[: section.index("</section>")]).split())
    assert "Answer-first accuracy" in section
    low, high = rv.results_frame(tmp_path / "runs").set_index("metric").loc["acc", ["ci_low", "ci_high"]]
    assert summary["n"] == 4 and high > low  # a Wilson interval, never of zero width
    shown = f"{100 * summary['acc']:.1f} [{100 * low:.1f}, {100 * high:.1f}] n=4"
    assert shown in section, section
