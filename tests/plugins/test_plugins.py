"""An installed third-party package adds a method, a perturbation, a judge, a dataset format and a backend.

The package (``tests/plugins/demo/robusteval_demo_plugin``) is installed the way pip leaves one: its files and a
``.dist-info`` folder with ``entry_points.txt`` on the path. Every check runs robusteval in a fresh process with
that path, so what is found is what ``importlib.metadata`` finds; nothing in robusteval names the plugin. The
method then runs end to end: its command, ``runs show``, a 2-model study (leaderboard with the paired test) and the
study's report.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.studies import YESNO

DEMO = Path(__file__).parent / "demo" / "robusteval_demo_plugin"
ENTRY_POINTS = """[robusteval.methods]
first-word = robusteval_demo_plugin.registration

[robusteval.perturbations]
demo = robusteval_demo_plugin.components

[robusteval.judges]
demo = robusteval_demo_plugin.components

[robusteval.datasets]
demo = robusteval_demo_plugin.components

[robusteval.backends]
demo = robusteval_demo_plugin.components
"""


def install(site: Path, entry_points: str = ENTRY_POINTS) -> Path:
    """The plugin installed into ``site`` (its package and a dist-info folder naming its entry points)."""
    shutil.copytree(DEMO, site / DEMO.name)
    info = site / "robusteval_demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: robusteval-demo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("site"))


def run(args: list[str], site: Path | None, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def cli(args: list[str], site: Path | None, cwd: Path) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "robusteval", *args], site, cwd)


def test_the_command_is_there_only_with_the_plugin(site: Path, tmp_path: Path) -> None:
    listed = cli(["--help"], site, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "first-word" in listed.stdout
    assert "first-word" not in cli(["--help"], None, tmp_path).stdout
    assert "--max-new-tokens" in cli(["first-word", "--help"], site, tmp_path).stdout


def test_the_components_join_their_registries(site: Path, tmp_path: Path) -> None:
    (tmp_path / "qs.tsv").write_text("Is water wet?\tyes\nIs fire cold?\tno\n", encoding="utf-8")
    script = """
import json, random
from robusteval.data.loaders.registry import load_dataset
from robusteval.judges.base import SemanticItem, build_judge
from robusteval.models import load_model
from robusteval.models.base import GenerationRequest
from robusteval.perturbations.base import ChangeBudget, Protection
from robusteval.perturbations.registry import MethodOptions, available_methods, method_info
upper = method_info("C-upper", "en").factory(MethodOptions())
text = upper.perturb("the cat sat", budget=ChangeBudget(rate=0.5, minimum=1), rng=random.Random(0), protect=Protection()).text
judge = build_judge("same-length", lambda spec: None, task="semantic")
verdicts = judge.judge([SemanticItem("a b", "c d"), SemanticItem("a b", "c")])
examples = load_dataset("lines", "qs.tsv")
echo = load_model("echo:yes")
print(json.dumps({"methods": [m.name for m in available_methods("en")], "text": text,
                  "labels": [v.label for v in verdicts], "examples": [[e.question, e.answer] for e in examples],
                  "reply": echo.generate([GenerationRequest("Is it?")])[0].text}))
"""
    done = run([sys.executable, "-c", script], site, tmp_path)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert "C-upper" in found["methods"]
    assert found["text"] != "the cat sat" and found["text"].lower() == "the cat sat"
    assert found["labels"] == [True, False]
    assert found["examples"] == [["Is water wet?", "yes"], ["Is fire cold?", "no"]]
    assert found["reply"] == "yes"


def test_a_plugin_method_runs_shows_and_joins_a_study(site: Path, tiny_trained_dir: Path, tiny_llama_dir: Path,
                                                      tmp_path: Path) -> None:
    out = tmp_path / "fw"
    args = ["first-word", "--model", f"hf:{tiny_trained_dir}", "--device", "cpu", "--dataset", "jsonl",
            "--data-file", YESNO, "--answer-type", "label", "--limit", "6", "--out", str(out)]
    done = cli(args, site, tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n"] == 6
    shown = cli(["runs", "show", str(out)], site, tmp_path)
    assert shown.returncode == 0, shown.stderr
    rates = next(line for line in shown.stdout.splitlines() if line.strip().startswith("rates"))
    assert "acc: " in rates and "n = 6" in rates and "[" in rates, rates  # its n and interval

    study = tmp_path / "study.toml"
    study.write_text(f"""title = "plugin study"
batch_size = 4

[[models]]
name = "alpha"
spec = "echo:yes"

[[models]]
name = "beta"
spec = "hf:{tiny_llama_dir}"
device = "cpu"

[datasets.yn]
dataset = "jsonl"
data_file = "{YESNO}"
answer_type = "label"
limit = 6

[methods.first-word]
datasets = ["yn"]
max_new_tokens = 3
""", encoding="utf-8")
    ran = cli(["study", str(study), "--out", str(tmp_path / "study")], site, tmp_path)
    assert ran.returncode == 0, ran.stderr + ran.stdout
    board = json.loads((tmp_path / "study" / "leaderboard.json").read_text())
    yes = sum(json.loads(line)["answer"] == "yes" for line in Path(YESNO).read_text().splitlines()[:6])
    cells = {cell["model"]: cell for cell in board["cells"] if cell["column"] == "first-word:yn:acc"}
    assert cells["alpha"]["value"] == pytest.approx(yes / 6) and cells["alpha"]["n"] == 6  # the plugin backend
    assert cells["alpha"]["ci95"][0] < cells["alpha"]["value"] < cells["alpha"]["ci95"][1]
    (pair,) = [p for p in board["pairwise"] if p["column"] == "first-word:yn:acc"]
    # The paired test read both runs' per-example outcomes through the plugin's results.
    assert pair["status"] == "tested" and pair["test"].startswith("McNemar") and pair["n_shared"] == 6
    beta_right = round(cells["beta"]["value"] * 6)
    assert yes != beta_right and sum(pair["discordant"]) >= abs(yes - beta_right)
    report = (tmp_path / "study" / "report.html").read_text(encoding="utf-8")
    assert "First-word accuracy" in report


def test_a_broken_plugin_is_one_line_naming_it(tmp_path: Path) -> None:
    site = install(tmp_path / "site", "[robusteval.methods]\nbroken = robusteval_demo_plugin.missing\n")
    done = cli(["runs", "show", str(tmp_path)], site, tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "plugin broken" in lines[0] and "robusteval-demo-plugin" in lines[0], done.stderr
