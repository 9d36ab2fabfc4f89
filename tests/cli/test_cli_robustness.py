"""``perturb``, ``robustness``, ``attack wordimportance`` and ``ors`` end to end on OCNLI with real tiny models:
files, summaries consistent with the stored answers, resume after SIGKILL, the Adv set, a served endpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.datafiles import write_ocnli
from helpers.runs import cli_inproc, record_computed, records, run_and_kill, summary, units
from helpers.servers import serve_transformers
from helpers.shared import needs_modules, shared_file
from robusteval.cli.main import main
from robusteval.data.loaders import load_dataset
from robusteval.evals.classification import ClassificationTemplate, LabelClassifier, example_fields
from robusteval.metrics.robustness import rb_index
from robusteval.models import load_backend
from robusteval.models.tiny import tiny_nli_pairs
from robusteval.perturbations import apply_edits
from robusteval.perturbations.base import Edit
from robusteval.perturbations.dataset import example_from_record
from robusteval.store import RunStore

pytestmark = needs_modules("pypinyin")  # C-homophone and C-pinyin


@pytest.fixture
def ocnli() -> Path:
    """The real OCNLI dev set, for the tests whose point is real text (skips or fails without it)."""
    return shared_file("ocnli/dev.json")


@pytest.fixture(scope="module")
def synthetic_ocnli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """96 OCNLI-format pairs in the tiny classifier's world, for tests about the commands, not the data."""
    return write_ocnli(tmp_path_factory.mktemp("ocnli") / "dev.json", tiny_nli_pairs(96, seed=11))


def test_perturb_writes_a_faithful_copy(ocnli: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "homophone.jsonl"
    args = ["perturb", "--dataset", "ocnli", "--data-file", str(ocnli), "--limit", "40", "--method", "C-homophone",
            "--seed", "1", "--out", str(out)]
    assert main(args) == 0
    assert "/40 examples changed" in capsys.readouterr().out
    original = load_dataset("ocnli", ocnli, limit=40)
    copy = load_dataset("examples", out)
    assert [e.id for e in copy] == [e.id for e in original]
    assert [e.answer for e in copy] == [e.answer for e in original]
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    n_changed = 0
    for line, orig in zip(lines, original, strict=True):
        fields = line["perturbation"]["fields"]
        assert set(fields) == {"text", "hypothesis"}
        assert fields["text"]["original"] == orig.question
        assert apply_edits(orig.question, [Edit.from_dict(e) for e in fields["text"]["edits"]]) == line["question"]
        hypothesis = orig.meta["hypothesis"]
        assert apply_edits(hypothesis, [Edit.from_dict(e) for e in fields["hypothesis"]["edits"]]) == \
            line["meta"]["hypothesis"]
        assert [c for c in line["question"] if c.isdigit()] == [c for c in orig.question if c.isdigit()]
        n_changed += line["perturbation"]["changed"]
    assert n_changed >= 35
    first = out.read_bytes()
    assert main(args) == 0
    assert out.read_bytes() == first  # seeded: the same command writes the same file
    other = list(args)
    other[other.index("--seed") + 1] = "2"
    other[-1] = str(tmp_path / "seed2.jsonl")
    assert main(other) == 0
    assert (tmp_path / "seed2.jsonl").read_bytes() != first


def test_perturb_bad_method_and_missing_translator(synthetic_ocnli: Path, tmp_path: Path) -> None:
    data = str(synthetic_ocnli)
    result = cli_inproc("perturb", "--dataset", "ocnli", "--data-file", data, "--limit", "2", "--method", "C-nope",
                 "--out", str(tmp_path / "x.jsonl"))
    assert result.returncode == 2 and "unknown perturbation method 'C-nope'" in result.stderr
    result = cli_inproc("perturb", "--dataset", "ocnli", "--data-file", data, "--limit", "2", "--method",
                 "S-backtranslation", "--out", str(tmp_path / "x.jsonl"))
    assert result.returncode == 2 and "--translator" in result.stderr


def robustness_args(model_dir: Path, data: Path, out: Path, sets: str, *extra: str, limit: int = 24) -> list[str]:
    return ["robustness", "--model", f"hf:{model_dir}", "--template", str(model_dir / "template.json"),
            "--dataset", "ocnli", "--data-file", str(data), "--limit", str(limit), "--sets", sets,
            "--bootstrap", "200", "--batch-size", "4", "--out", str(out), *extra]


def test_robustness_summary_matches_stored_answers(tiny_nli_dir: Path, ocnli: Path, tmp_path: Path) -> None:
    out = tmp_path / "rb"
    assert main(robustness_args(tiny_nli_dir, ocnli, out, "C-homophone,C-traditional,W-synonym")) == 0
    result = summary(out)
    assert set(result["acc"]) == {"C-homophone", "C-traditional", "W-synonym"}
    assert result["n"] == 24
    assert result["n_unparsed"]["original"] <= 2
    # Recompute every accuracy from the stored perturbed texts and the stored answers: asking the classifier
    # again over the same store must cost no query, and the accuracies must equal the summary's.
    originals = load_dataset("ocnli", ocnli, limit=24)
    by_method: dict[str, dict[str, dict]] = {}
    for record in records(out, "perturbed_example"):
        by_method.setdefault(record["perturbation"]["method"], {})[record["id"]] = record
    classifier = LabelClassifier(load_backend(f"hf:{tiny_nli_dir}"),
                                 ClassificationTemplate.load(str(tiny_nli_dir / "template.json")),
                                 RunStore.open_existing(out))

    def accuracy(examples: list) -> float:
        answers = classifier.classify([example_fields(ex) for ex in examples])
        return sum(a["label"] == ex.answer for a, ex in zip(answers, examples, strict=True)) / len(examples)

    assert accuracy(originals) == pytest.approx(result["acc_original"])
    expected = []
    for name in ("C-homophone", "C-traditional", "W-synonym"):
        perturbed = [example_from_record(by_method[name][ex.id]) for ex in originals]
        expected.append(accuracy(perturbed))
        assert expected[-1] == pytest.approx(result["acc"][name])
    assert classifier.queries == 0
    assert result["rb_index"] == pytest.approx(rb_index(accuracy(originals), expected))
    lo, hi = result["rb_index_ci95"]
    assert lo <= result["rb_index"] <= hi
    assert all(result["sets"][name]["n_changed"] >= 20 for name in result["acc"])
    before = units(out)
    assert main(robustness_args(tiny_nli_dir, ocnli, out, "C-homophone,C-traditional,W-synonym")) == 0
    assert units(out) == before  # a finished run computes nothing new


def test_robustness_resumes_after_sigkill(tiny_nli_dir: Path, synthetic_ocnli: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "killed"
    args = robustness_args(tiny_nli_dir, synthetic_ocnli, out, "C-homophone,C-pinyin", "--batch-size", "1", limit=16)
    stored = run_and_kill(args, out, stage="classify", at_least=5, logs=tmp_path)
    created = {key: at for _, key, at in stored}
    computed = record_computed(monkeypatch)
    assert main(args) == 0, capsys.readouterr().err
    final = units(out)
    assert {key: at for _, key, at in final if key in created} == created  # kept
    assert computed and not set(computed) & {row[:2] for row in stored}  # and not computed again
    classified = {row[:2] for row in final if row[0] == "classify"}
    assert classified == {row[:2] for row in stored if row[0] == "classify"} | {u for u in computed if u[0] == "classify"}
    clean = tmp_path / "clean"
    assert main(robustness_args(tiny_nli_dir, synthetic_ocnli, clean, "C-homophone,C-pinyin", "--batch-size", "1",
                                limit=16)) == 0
    resumed, fresh = summary(out), summary(clean)
    for key in ("acc_original", "acc", "rb_index", "rb_index_ci95"):
        assert resumed[key] == fresh[key]


def attack_args(model: str, template: Path, data: Path, out: Path, method: str, *extra: str,
                limit: int = 12) -> list[str]:
    return ["attack", "wordimportance", "--model", model, "--template", str(template), "--dataset", "ocnli",
            "--data-file", str(data), "--limit", str(limit), "--method", method, "--rates", "0.1,0.2,0.3",
            "--budget", "60", "--out", str(out), *extra]


def test_attack_cli_adv_set_resume_and_ors(tiny_nli_dir: Path, ocnli: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    template = tiny_nli_dir / "template.json"
    model = f"hf:{tiny_nli_dir}"
    # Resume after SIGKILL: units stored before the kill are kept, and the result equals a clean run.
    killed = tmp_path / "killed"
    args = attack_args(model, template, ocnli, killed, "C-homophone")
    stored = run_and_kill(args, killed, stage="wordimportance", at_least=2, logs=tmp_path)
    created = {key: at for stage, key, at in stored if stage == "wordimportance"}
    assert main(args) == 0, capsys.readouterr().err
    assert {k: at for s, k, at in units(killed) if k in created} == created
    clean = tmp_path / "homophone"
    adv = tmp_path / "adv.jsonl"
    assert main(attack_args(model, template, ocnli, clean, "C-homophone", "--write-adv", str(adv))) == 0
    assert records(killed, "wordimportance") == records(clean, "wordimportance")
    result = summary(clean)
    assert result["attack"] == "wordimportance" and set(result["asr_by_rate"]) == {"0.1", "0.2", "0.3"}
    # The Adv set holds exactly the successes at the largest rate and feeds `robustness`.
    wins = [r for r in records(clean, "wordimportance") if r["status"] == "success"]
    assert wins, "the attack should flip some of the 12 pairs, or the Adv-set checks below check nothing"
    adv_set = load_dataset("examples", adv)
    assert [e.id for e in adv_set] == [r["id"] for r in wins]
    rb = tmp_path / "rb-adv"
    assert main(robustness_args(tiny_nli_dir, ocnli, rb, f"Adv={adv}", limit=12)) == 0
    assert summary(rb)["sets"]["Adv"]["n_changed"] == len(wins)


def test_attack_served_hard_label_and_ors(tiny_nli_dir: Path, ocnli: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Two models (the hf model with log-probs; the same weights behind `transformers serve`, labels only)
    x two methods, then `ors` matches the formula computed here by hand."""
    template = tiny_nli_dir / "template.json"
    runs = []
    with serve_transformers(tiny_nli_dir, log_path=tmp_path / "serve.log") as base_url:
        served = f"openai:{tiny_nli_dir}@{base_url}"
        for model, tag in ((f"hf:{tiny_nli_dir}", "hf"), (served, "served")):
            for method in ("C-homophone", "C-traditional"):
                out = tmp_path / f"{tag}-{method}"
                extra = ("--confidence", "sample", "--n-samples", "2") if tag == "served" else ()
                assert main(attack_args(model, template, ocnli, out, method, *extra, limit=6)) == 0, \
                    capsys.readouterr().err
                runs.append(out)
    served_summary = summary(tmp_path / "served-C-homophone")
    assert served_summary["confidence"] == "sample"
    assert all(r["queries"] <= 60 for r in records(tmp_path / "served-C-homophone", "wordimportance"))
    assert main(["ors", *map(str, runs), "--out", str(tmp_path / "ors")]) == 0
    report = json.loads((tmp_path / "ors" / "ors.json").read_text("utf-8"))
    table = {}
    for out in runs:
        s = summary(out)
        table.setdefault(s["model"], {})[s["method"]] = [100 * s["asr_by_rate"][k] for k in ("0.1", "0.2", "0.3")]
    means = [sum(u) / 3 for attacks in table.values() for u in attacks.values()]
    beta = 100
    for z in range(1, 101):
        if min(100 - z * m for m in means) <= 0:
            beta = z - 1
            break
    assert report["beta"] == beta
    for model, attacks in table.items():
        scores = [10 * (100 - beta * sum(u) / 3) / 100 for u in attacks.values()]
        assert report["ors"][model] == pytest.approx(sum(scores) / len(scores))
    assert "reconstruction" in capsys.readouterr().out


def test_combined_attack_uses_every_available_method(tiny_nli_dir: Path, synthetic_ocnli: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Pairs in the tiny classifier's world: it answers them right, so they are attacked and edited (on 4 real
    # OCNLI pairs it is right on one only, and that attack kept no edit: the method check had nothing to see).
    out = tmp_path / "combined"
    assert main(attack_args(f"hf:{tiny_nli_dir}", tiny_nli_dir / "template.json", synthetic_ocnli, out, "combined",
                            limit=4)) == 0
    printed = capsys.readouterr().out
    assert "leaving out W-maskedlm" in printed  # no --mlm-model given
    result = summary(out)
    # W-wordembedding falls back to the target's own embedding matrix.
    assert result["methods"] == ["C-traditional", "C-pinyin", "C-radical", "C-morphonym", "C-shuffle",
                                 "W-homophone", "W-synonym", "W-wordembedding"]
    used = [e["method"] for record in records(out, "wordimportance")
            for edits in record.get("edits", {}).values() for e in edits]
    assert used and set(used) <= set(result["methods"])


def test_robustness_on_generic_labelled_jsonl(tiny_nli_dir: Path, tmp_path: Path) -> None:
    """A user's own labelled JSONL with a field mapping and the built-in generic template."""
    data = tmp_path / "reviews.jsonl"
    rows = [("这家饭店的菜很好吃，服务也很热情", "positive"), ("房间很脏，空调也坏了", "negative"),
            ("快递三天就到了，包装完好", "positive"), ("质量太差，用了一天就坏了", "negative")]
    data.write_text("".join(json.dumps({"uid": f"r{i}", "review": t, "sentiment": s}, ensure_ascii=False) + "\n"
                            for i, (t, s) in enumerate(rows)), "utf-8")
    out = tmp_path / "rb-jsonl"
    args = ["robustness", "--model", f"hf:{tiny_nli_dir}", "--dataset", "jsonl", "--data-file", str(data),
            "--fields", "id=uid,question=review,answer=sentiment", "--answer-type", "label",
            "--sets", "C-homophone,C-traditional", "--label-mode", "soft", "--bootstrap", "100", "--out", str(out)]
    assert main(args) == 0
    result = summary(out)
    assert result["template"] == "text-classification" and result["n"] == 4
    assert set(result["acc"]) == {"C-homophone", "C-traditional"}
    prompts = records(out, "perturbed_example")
    assert all(r["answer"] in {"positive", "negative"} for r in prompts)
    # The label words are protected and appear nowhere changed.
    assert all("positive" not in r["question"] for r in prompts)


def test_bad_input_is_one_line_exit_2(tiny_nli_dir: Path, synthetic_ocnli: Path, tmp_path: Path) -> None:
    template = tiny_nli_dir / "template.json"
    model = f"hf:{tiny_nli_dir}"
    data = synthetic_ocnli
    result = cli_inproc(*attack_args(model, template, data, tmp_path / "a", "C-homophone")[:-2], "--rates", "0,2",
                 "--out", str(tmp_path / "a"))
    assert result.returncode == 2 and "--rates" in result.stderr and "Traceback" not in result.stderr
    result = cli_inproc(*robustness_args(tiny_nli_dir, data, tmp_path / "b", "Adv=/no/such.jsonl"))
    assert result.returncode == 2 and "/no/such.jsonl" in result.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "q", "answer": "neutral", "answer_type": "label"}\n{"id": \n', "utf-8")
    result = cli_inproc(*robustness_args(tiny_nli_dir, data, tmp_path / "c", f"Adv={bad}"))
    assert result.returncode == 2 and f"{bad}:2" in result.stderr
    assert not (tmp_path / "c").exists()  # checked before the model loads and the run directory is claimed
    for args in (robustness_args(tiny_nli_dir, data, tmp_path / "d", "C-nope"),
                 attack_args(model, template, data, tmp_path / "d", "W-nope")):
        result = cli_inproc(*args)
        assert result.returncode == 2 and "unknown perturbation method" in result.stderr
        assert not (tmp_path / "d").exists()  # refused before the model loads and --out is claimed
    (tmp_path / "not-a-run").mkdir()
    result = cli_inproc("ors", str(tmp_path / "not-a-run"), "--out", str(tmp_path / "ors"))
    assert result.returncode == 2 and "summary.json" in result.stderr


def test_perturb_backtranslation_through_the_cli(tiny_llama_dir: Path, synthetic_ocnli: Path, tmp_path: Path) -> None:
    """Regression: `perturb` had no backend options, so --translator crashed building the backend.
    The untrained tiny model never ends its line, so every back-translation is rejected, with the reason."""
    out = tmp_path / "bt.jsonl"
    assert main(["perturb", "--dataset", "ocnli", "--data-file", str(synthetic_ocnli), "--limit", "2", "--method",
                 "S-backtranslation", "--translator", f"hf:{tiny_llama_dir}", "--out", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert len(lines) == 2
    for line in lines:
        assert line["perturbation"]["fields"]["text"]["note"] == "back-translation rejected: truncated"
        assert line["question"] == line["perturbation"]["fields"]["text"]["original"]


def test_perturb_resumes_after_sigkill(tiny_llama_dir: Path, synthetic_ocnli: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A slow method (back-translation through a model) commits each batch; a killed run keeps them."""
    out = tmp_path / "bt.jsonl"
    # Two batches of 32 (a sentence-level method's batch): killed once the first is stored, the second under way.
    args = ["perturb", "--dataset", "ocnli", "--data-file", str(synthetic_ocnli), "--limit", "64", "--method",
            "S-backtranslation", "--translator", f"hf:{tiny_llama_dir}", "--out", str(out)]
    work = Path(f"{out}.parts")
    stored = run_and_kill(args, work, stage="perturbed_example", at_least=32, logs=tmp_path, deadline_s=150)
    assert not out.exists()  # nothing half-written
    created = {key: at for _, key, at in stored}
    assert 32 <= len(created) < 64
    # Resume in-process and look at the work directory just before it is removed: nothing stored was redone.
    seen: dict[str, float] = {}
    real_rmtree = shutil.rmtree

    def capture_then_remove(path: Path) -> None:
        seen.update({key: at for _, key, at in units(Path(path))})
        real_rmtree(path)

    monkeypatch.setattr(shutil, "rmtree", capture_then_remove)
    computed = record_computed(monkeypatch)
    assert main(args) == 0
    assert len(seen) == 64 and {k: at for k, at in seen.items() if k in created} == created
    assert {key for _, key in computed} == set(seen) - set(created)  # only the missing batch was computed
    assert not work.exists() and len(out.read_text("utf-8").splitlines()) == 64
