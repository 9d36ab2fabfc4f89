"""`--compat var-math` reproduces the published VAR-MATH instance files byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from variants_testlib import run_cli, var_published, var_template

from robusteval.variants.checks import validate_templates
from robusteval.variants.template import load_templates
from robusteval.variants.varmath_csv import import_csv, translate_expression


def _csvs() -> str:
    return f"{var_template('amc23')},{var_template('aime24')}"


def test_compat_output_equals_published_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "split"
    code = run_cli(
        [
            "variants",
            "instantiate",
            "--compat",
            "var-math",
            "--n",
            "5",
            "--seed",
            "42",
            "--templates",
            _csvs(),
            "--out-dir",
            str(out_dir),
        ],
        monkeypatch,
    )
    assert code == 0
    amc = (out_dir / "VAR-Math_amc23.jsonl").read_bytes()
    aime = (out_dir / "VAR-Math_aime24.jsonl").read_bytes()
    assert amc == var_published("amc23").read_bytes()
    assert aime == var_published("aime24").read_bytes()
    assert len(amc.splitlines()) == 183 and len(aime.splitlines()) == 126

    one = tmp_path / "all.jsonl"
    assert (
        run_cli(
            [
                "variants",
                "instantiate",
                "--compat",
                "var-math",
                "--n",
                "5",
                "--seed",
                "42",
                "--templates",
                _csvs(),
                "--out",
                str(one),
            ],
            monkeypatch,
        )
        == 0
    )
    assert one.read_bytes() == amc + aime


def test_compat_after_import_to_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CSV -> native YAML -> compat instances: the native format carries everything the generator needs."""
    paths = []
    for name in ("amc23", "aime24"):
        target = tmp_path / f"{name}.yaml"
        assert (
            run_cli(
                [
                    "variants",
                    "import",
                    "--templates",
                    str(var_template(name)),
                    "--out",
                    str(target),
                ],
                monkeypatch,
            )
            == 0
        )
        paths.append(str(target))
    out = tmp_path / "all.jsonl"
    assert (
        run_cli(
            [
                "variants",
                "instantiate",
                "--compat",
                "var-math",
                "--templates",
                ",".join(paths),
                "--out",
                str(out),
            ],
            monkeypatch,
        )
        == 0
    )
    published = var_published("amc23").read_bytes() + var_published("aime24").read_bytes()
    assert out.read_bytes() == published


def test_order_matters_like_the_original_generator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One shared stream: aime24 alone (stream not advanced by amc23) gives different shuffles.
    out = tmp_path / "aime_only.jsonl"
    published_file = var_published("aime24")
    code = run_cli(
        [
            "variants",
            "instantiate",
            "--compat",
            "var-math",
            "--templates",
            str(var_template("aime24")),
            "--out",
            str(out),
        ],
        monkeypatch,
    )
    assert code == 0
    assert out.read_bytes() != published_file.read_bytes()
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    published = [json.loads(line)["id"] for line in published_file.read_text().splitlines()]
    assert len(ids) == 126 and ids == published  # same ids and counts, only the sampled values differ


def test_csv_expressions_are_translated_not_executed() -> None:
    assert translate_expression("math.comb(10, int(VAR_X-1))") == "comb(10, int(VAR_X - 1))"
    assert translate_expression("np.log(3)/np.log(10)") == "log(3) / log(10)"
    assert translate_expression("((1+1j)**2).real%1000") == "re((1 + 1j) ** 2) % 1000"
    assert translate_expression("Fraction(1,3).numerator") == "numerator(Fraction(1, 3))"
    assert translate_expression("list([6,2,4,8])[int(VAR_X%4)]") == "[6, 2, 4, 8][int(VAR_X % 4)]"
    assert translate_expression("sum([(v+1)**2 for v in range(1,4)])") == "sum_range(v, 1, 4, (v + 1) ** 2)"


def test_published_csv_imports_all_but_the_filtered_double_loop() -> None:
    result = import_csv(var_template("aime25"))
    # aime25 id 3 is a filtered double loop: reported, the other 29 rows still import.
    assert [p.template_id for p in result.problems] == ["3"]
    assert len(result.templates) == 29


def test_validate_reports_templates_that_do_not_reproduce(capsys: pytest.CaptureFixture[str]) -> None:
    loaded = load_templates([var_template("amc23"), var_template("aime24")])
    checks = [c for _, r in loaded for c in validate_templates(r.templates, r.problems)]
    bad = {(c.template_id, c.status) for c in checks if c.status != "ok"}
    # amc23 #22 defines VAR_X twice (original 2023 lost); aime24 II-8 originals are in no aligned row;
    # amc23 #11 records no original values.
    assert bad == {("22", "mismatch"), ("2024-II-8", "mismatch"), ("11", "unchecked")}
    assert sum(c.status == "ok" for c in checks) == 67


def test_colliding_ids_across_files_and_prefix_ids() -> None:
    files = [var_template("amc23"), var_template("aime25")]
    plain = load_templates(files)[1][1]
    assert any("duplicate id" in str(p) for p in plain.problems)
    prefixed = load_templates(files, prefix_ids=True)[1][1]
    assert not any("duplicate id" in str(p) for p in prefixed.problems)
    assert prefixed.templates[0].id.startswith("VAR-Math_aime25/")
