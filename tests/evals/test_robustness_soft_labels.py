"""A soft-label robustness run scores labels by log-probs and parses nothing: no surface may claim unparsed labels
"counted wrong" beside its accuracy (issue 35: "unparsed 12 … counted wrong" next to an accuracy of 0.5). The tiny
random Llama writes no readable label, so the same run under hard labels has every label unparsed."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.runs import cli_inproc, summary
from robusteval.report.rates import run_rates
from robusteval.runs import load_run


def _labelled(path: Path) -> Path:
    rows = [{"id": f"q{i}", "question": f"Is {i} apples in the basket an even number of apples?",
             "answer": "yes" if i % 2 == 0 else "no"} for i in range(6)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_soft_labels_claim_no_unparsed_labels(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = _labelled(tmp_path / "q.jsonl")
    runs: dict[str, Path] = {}
    printed: dict[str, str] = {}
    for mode in ("hard", "soft"):
        runs[mode] = out = tmp_path / mode
        done = cli_inproc("robustness", "--model", f"hf:{tiny_llama_dir}", "--dataset", "jsonl", "--data-file", str(data),
                   "--answer-type", "label", "--sets", "C-swap", "--label-mode", mode, "--bootstrap", "20",
                   "--out", str(out))
        assert done.returncode == 0, done.stderr
        printed[mode] = done.stdout
    hard, soft = summary(runs["hard"]), summary(runs["soft"])
    assert hard["n_unparsed"] == {"original": 6, "C-swap": 6}  # the generations hold no label: hard labels fail
    assert "unparsed" in printed["hard"]
    # Soft labels: every example scored, none unread; the table and every rate's note say so.
    assert soft["n_unparsed"] == {"original": 0, "C-swap": 0} and soft["acc_original"] is not None
    assert "unparsed" not in printed["soft"] and "soft labels, n=6" in printed["soft"]
    notes = {rate.metric: rate.note for rate in run_rates(load_run(runs["soft"]))}
    assert notes["acc[original]"] == notes["acc[C-swap]"] == "soft labels"
