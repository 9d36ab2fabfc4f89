"""``prompt-robustness`` (issue 39, item 1): perturbed prompts differ from the clean one only in the chosen
surface, PDR and its interval against values computed by hand, resume, refusals before a model loads, and the
command's one table, on the tiny random Llama (soft labels: it writes no readable label)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest

import robusteval as rv
from helpers.runs import cli_inproc, summary, units
from robusteval.data.example import example_fields
from robusteval.data.loaders import load_dataset
from robusteval.evals.classification import ClassificationTemplate, LabelClassifier, predicted_label
from robusteval.evals.prompt_options import PromptOptions
from robusteval.evals.prompt_robustness import PromptRobustnessConfig
from robusteval.evals.prompt_robustness.generate import perturbed_prompts
from robusteval.evals.prompt_robustness.pdr import prompt_robustness_metrics
from robusteval.evals.prompt_robustness.surfaces import (
    PARAGRAPH,
    PromptSurfaces,
    PromptVariant,
    variant_template,
)
from robusteval.perturbations.base import Protection
from robusteval.perturbations.spec import PerturbationSpec
from robusteval.store import RunStore

QUESTIONS = [("Is ice colder than steam?", "yes"), ("Can a fish climb a tree?", "no"),
             ("Is a week longer than a day?", "yes"), ("Is nine smaller than two?", "no"),
             ("Do birds have feathers?", "yes"), ("Can a stone swim?", "no")]


def _data(path: Path) -> Path:
    rows = [{"id": f"q{i}", "question": q, "answer": a} for i, (q, a) in enumerate(QUESTIONS)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _config(data: Path, **options: Any) -> PromptRobustnessConfig:
    return PromptRobustnessConfig(data=rv.DataSpec("jsonl", str(data), answer_type="label"),
                                  perturbation=PerturbationSpec(language="en"), label_mode="soft", bootstrap=200,
                                  **{"methods": "C-swap,C-keyboard", "prompts_per_method": 2, **options})


# ------------------------------------------------------------------ only the target changes
@pytest.mark.parametrize("target", ["instruction", "format", "exemplars", "system"])
def test_a_perturbed_prompt_differs_only_in_its_target(target: str, tiny_backend: Any, tmp_path: Path) -> None:
    template = ClassificationTemplate.load("yesno")
    chat = target == "system"
    system = "You are a careful assistant who answers questions about everyday things." if chat else None
    surfaces = PromptSurfaces.of(template, system)
    with RunStore.open(tmp_path / "run", {"test": target}) as store:
        prompts = perturbed_prompts(store, surfaces, target, ["C-keyboard", "C-swap"], 3, language="en",
                                    spec=PerturbationSpec(language="en"), protect=Protection(words=frozenset(
                                        template.label_words)), seed=7)
    assert len(prompts) == 6 and all(p.changed for p in prompts)
    clean = surfaces.clean()
    fields = [{"text": q} for q, _ in QUESTIONS]
    base = LabelClassifier(tiny_backend, template, chat=chat, system_prompt=system, soft=False)
    for prompt in prompts:
        variant = prompt.variant
        other = LabelClassifier(tiny_backend, variant_template(template, variant), chat=chat,
                                system_prompt=variant.system if chat else None, soft=False)
        for item in fields:
            asked, clean_asked = other.request(item), base.request(item)
            if chat:  # the user turn (instruction, exemplars, question) byte-identical; the system turn changed
                assert asked.messages[1:] == clean_asked.messages[1:]
                assert asked.messages[0]["content"] != clean_asked.messages[0]["content"]
            else:  # the question's text byte-identical in every prompt
                assert asked.prompt == clean_asked.prompt and item["text"] in asked.prompt
        assert other.key(fields[0]) != base.key(fields[0])  # each prompt's answers stored apart
        if chat:
            assert variant.prefix == clean.prefix
            continue
        new, old = variant.prefix.split(PARAGRAPH), clean.prefix.split(PARAGRAPH)
        assert len(new) == len(old)
        if target == "instruction":
            assert new[1:] == old[1:] and new[0] != old[0]
        elif target == "format":  # the instruction paragraph is the format sentence alone in yesno
            start, end = surfaces.format_span or (0, 0)
            assert new[1:] == old[1:] and new[0] != old[0] and (start, end) == (0, len(old[0]))
        else:  # each exemplar's question perturbed; its heads and answer, and the instruction, as they were
            assert new[0] == old[0]
            for before, after in zip(old[1:-1], new[1:-1], strict=True):
                q_old, a_old = before.split("\nAnswer:")
                q_new, a_new = after.split("\nAnswer:")
                assert a_new == a_old and q_new.startswith("Question: ") and q_new != q_old
            assert any(a != b for a, b in zip(old, new, strict=True))
        assert "yes" in variant.prefix and "no" in variant.prefix  # label words protected


def test_the_format_line_is_the_sentence_naming_every_label() -> None:
    surfaces = PromptSurfaces.of(ClassificationTemplate.load("nli-zh"))
    assert surfaces.pieces("format") == {"format": "Answer with one word: entailment, neutral or contradiction."}
    rebuilt = surfaces.rebuild("format", {"format": "Reply: entailment, neutral or contradiction."})
    assert rebuilt.prefix == surfaces.clean().prefix.replace(
        "Answer with one word: entailment, neutral or contradiction.", "Reply: entailment, neutral or contradiction.")
    assert set(surfaces.pieces("exemplars")) == {f"exemplar{i}.{f}" for i in range(3) for f in ("premise", "hypothesis")}


# ------------------------------------------------------------------ PDR and its interval, by hand
def test_pdr_and_interval_against_hand_computed_values() -> None:
    clean = [True] * 6 + [False] * 2  # A(clean) = 6/8
    worse = [True, True, True, False, False, True, False, False]  # A = 4/8: PDR = 1 - 0.5/0.75 = 1/3
    same = list(clean)  # changed prompt, same answers: PDR 0
    untouched = list(clean)  # the method changed nothing
    seed, resamples = 11, 500
    out = prompt_robustness_metrics(clean, {"a": worse, "b": same, "u": untouched}, {"M": ["a", "b", "u"]},
                                    {"a": True, "b": True, "u": False}, seed=seed, n_resamples=resamples)
    assert out["n"] == 8 and out["acc_clean"] == 0.75 and out["prompts"]["a"]["acc"] == 0.5
    assert out["prompts"]["a"]["pdr"] == pytest.approx(1 / 3)
    assert out["prompts"]["b"]["pdr"] == 0.0
    assert out["prompts"]["u"]["pdr"] is None and "changed nothing" in out["prompts"]["u"]["excluded_reason"]
    # The method's PDR over its changed prompts: 1 - mean(0.5, 0.75) / 0.75 = 1/6; the RB-index is the same here.
    assert out["methods"]["M"]["pdr"] == pytest.approx(1 / 6) and out["methods"]["M"]["T"] == 2
    assert out["rb_index"] == pytest.approx(1 / 6) and out["prompts_excluded"] == ["u"]
    # The percentile bootstrap over questions, written out: the same questions drawn for both prompts.
    c, p = np.array(clean, float), np.array(worse, float)
    rows = np.random.default_rng(seed).integers(0, 8, size=(resamples, 8))
    stats = np.array([1 - p[r].mean() / c[r].mean() if c[r].mean() > 0 else np.nan for r in rows])
    low, high = np.quantile(stats[np.isfinite(stats)], [0.025, 0.975])
    assert out["prompts"]["a"]["pdr_ci95_method"] == "bootstrap"
    assert out["prompts"]["a"]["pdr_ci95"] == pytest.approx([low, high])


def test_a_collapsed_bootstrap_falls_back_to_the_ratio_box() -> None:
    # Every question right with both prompts: every resample gives PDR 0, a point. The fallback: the Newcombe
    # difference interval and the Wilson interval of A(clean), each at 97.5%, and the ratio over their box.
    out = prompt_robustness_metrics([True] * 4, {"a": [True] * 4}, {"M": ["a"]}, {"a": True}, seed=0,
                                    n_resamples=200)
    z = NormalDist().inv_cdf(1 - 0.025 / 2)
    wilson_low = 4 / (4 + z * z)  # Wilson's lower end at 4/4
    half = 1 - wilson_low  # both means 1, no correlation (constant columns): the difference is +-(1 - L)
    entry = out["prompts"]["a"]
    assert entry["pdr"] == 0.0 and entry["pdr_ci95_method"] == "newcombe-wilson-ratio-box"
    assert entry["pdr_ci95"] == pytest.approx([-half / wilson_low, 1.0])
    assert out["methods"]["M"]["pdr_ci95"] == pytest.approx([-half / wilson_low, 1.0])


# ------------------------------------------------------------------ the pipeline on the tiny model
def test_run_matches_stored_answers_and_resumes(tiny_backend: Any, tmp_path: Path) -> None:
    data = _data(tmp_path / "q.jsonl")
    out = tmp_path / "run"
    first = rv.prompt_robustness(_config(data, methods="C-swap"), tiny_backend, out, batch_size=4)
    done = units(out)
    assert first["n"] == 6 and first["target"] == "instruction" and first["unit"].startswith("question")
    assert set(first["prompts"]) == {"C-swap#1", "C-swap#2"}
    assert first["clean_prompt"]["pieces"] == {"instruction": "Answer each question with one word: yes or no."}
    # The same run again: nothing computed, the same summary.
    again = rv.prompt_robustness(_config(data, methods="C-swap"), tiny_backend, out, batch_size=4)
    assert units(out) == done
    assert {k: v for k, v in again.items() if k != "environment"} == {
        k: v for k, v in first.items() if k != "environment"}
    # One more method: the units already stored are kept as they were, only the new prompts are asked.
    more = rv.prompt_robustness(_config(data), tiny_backend, out, batch_size=4)
    now = units(out)
    assert now[: len(done)] == done and len(now) == len(done) + 2 + 2 * 6
    assert set(more["methods"]) == {"C-swap", "C-keyboard"} and more["T"] == 4
    assert more["prompts"]["C-swap#1"] == first["prompts"]["C-swap#1"]
    # Every accuracy from the stored answers: asking again through the same store costs no query.
    examples = load_dataset("jsonl", data, answer_type="label")
    template = ClassificationTemplate.load("yesno")
    with RunStore.open_existing(out) as store:
        for name in ("clean", *more["prompts"]):
            prefix = more["clean_prompt"]["prefix"] if name == "clean" else more["prompts"][name]["prefix"]
            classifier = LabelClassifier(tiny_backend, variant_template(template, PromptVariant(prefix, None)),
                                         store, soft=True)
            answers = classifier.classify([example_fields(ex) for ex in examples])
            acc = sum(predicted_label(a, "soft") == ex.answer for a, ex in zip(answers, examples, strict=True)) / 6
            assert classifier.queries == 0
            assert acc == pytest.approx(more["acc_clean"] if name == "clean" else more["prompts"][name]["acc"])
            if name != "clean" and more["acc_clean"]:
                assert more["prompts"][name]["pdr"] == pytest.approx(1 - acc / more["acc_clean"])
                assert more["prompts"][name]["pdr_ci95"] is not None
                assert more["prompts"][name]["pdr_ci95"][1] > more["prompts"][name]["pdr_ci95"][0]


def test_bad_values_are_refused_before_the_model_loads(tmp_path: Path) -> None:
    data = _data(tmp_path / "q.jsonl")
    with pytest.raises(rv.ConfigError, match=r"methods: unknown perturbation method 'C-keybord' \(did you mean "
                       r"C-keyboard\?\)"):
        _config(data, methods="C-swap,C-keybord")
    with pytest.raises(rv.ConfigError, match=r"target: 'exemplar' is not one of .*did you mean exemplars\?"):
        _config(data, target="exemplar")
    with pytest.raises(rv.ConfigError, match="system_prompt"):
        _config(data, target="system")
    # The model is a spec that cannot load: the refusal comes from the checks, before any load is tried.
    text_template = tmp_path / "bare.json"
    text_template.write_text(json.dumps({"name": "bare", "labels": {"yes": ["yes"], "no": ["no"]},
                                         "text_fields": ["text"], "prefix": "", "prompt": "Q: $text\nA:"}))
    with pytest.raises(rv.ConfigError, match="target: template 'bare' has no instruction paragraph"):
        rv.prompt_robustness(_config(data, prompt=PromptOptions(template=str(text_template))), "hf:/no/such/model", tmp_path / "x")
    with pytest.raises(rv.ConfigError, match="methods: perturbation method 'C-homophone' perturbs zh text"):
        rv.prompt_robustness(_config(data, methods="C-homophone"), "hf:/no/such/model", tmp_path / "x")
    assert not (tmp_path / "x").exists()
    result = cli_inproc("prompt-robustness", "--model", "hf:/no/such/model", "--dataset", "jsonl", "--data-file", str(data),
                 "--answer-type", "label", "--methods", "C-swpa", "--out", str(tmp_path / "y"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--methods: unknown perturbation method 'C-swpa' (did you mean C-swap?)" in result.stderr
    assert not (tmp_path / "y").exists()


def test_cli_prints_one_table_with_n_and_intervals(tiny_llama_dir: Path, tmp_path: Path) -> None:
    data = _data(tmp_path / "q.jsonl")
    out = tmp_path / "run"
    result = cli_inproc("prompt-robustness", "--model", f"hf:{tiny_llama_dir}", "--dataset", "jsonl", "--data-file",
                 str(data), "--answer-type", "label", "--methods", "C-swap,C-keyboard", "--prompts-per-method", "2",
                 "--target", "exemplars", "--label-mode", "soft", "--bootstrap", "100", "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sum("accuracy under perturbed prompts" in line for line in lines) == 1
    rows = [line for line in lines if line.startswith("│")]
    names = ["clean", "C-swap#1", "C-swap#2", "C-swap (all 2)", "C-keyboard#1", "C-keyboard#2", "C-keyboard (all 2)"]
    assert [row.split("│")[1].strip() for row in rows] == names
    ran = summary(out)
    for row, name in zip(rows, names, strict=True):
        cells = [cell.strip() for cell in row.split("│")[1:-1]]
        if "#" in name or name == "clean":
            assert cells[1].endswith("n=6") and "[" in cells[1]  # accuracy with its interval and n
        if name != "clean":
            assert cells[2].endswith("n=6") and "[" in cells[2]  # PDR with its interval and n
    assert ran["target"] == "exemplars" and ran["T"] == 4
    rb = [line for line in lines if line.startswith("RB-index over 4 perturbed prompt(s): ")]
    assert len(rb) == 1 and "n=6" in rb[0] and math.isfinite(float(rb[0].split(": ")[1].split()[0]))
