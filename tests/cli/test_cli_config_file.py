"""A ``--config`` TOML file's mistakes are one line naming the file, the line and the key, as a study file's are:
the closest key for a typo, the kind a key wants for a value of the wrong one (never Python's own wording)."""

from __future__ import annotations

from pathlib import Path

import pytest

from robusteval.cli.main import main

HEAD = 'model = "hf:/nonexistent"\ndataset = "gsm8k"\n'


@pytest.mark.parametrize(("line", "says"), [
    ("max-new-tokns = 5", "max-new-tokns: unknown key for this command (did you mean max-new-tokens?)"),
    ("max_new_tokns = 5", "max_new_tokns: unknown key for this command (did you mean max-new-tokens?)"),
    ('limit = "five"', "limit: expected a whole number, got 'five'"),
    ("limit = 2.5", "limit: expected a whole number, got 2.5"),
    ('dataset = "gsm8kk"', "dataset: 'gsm8kk' is not one of"),
    ("zzzz = 1", "zzzz: unknown key for this command; known keys: "),
])
def test_a_config_file_mistake_names_its_line_and_key(tmp_path: Path, line: str, says: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "run.toml"
    head = HEAD.replace('dataset = "gsm8k"\n', "") if line.startswith("dataset") else HEAD
    config.write_text(head + f'out = "{tmp_path / "o"}"\n' + line + "\n", encoding="utf-8")
    number = len(config.read_text().splitlines())
    assert main(["eval", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"robusteval: error: {config}:{number}: {says}"), err
    assert len(err.splitlines()) == 1 and "invalid literal" not in err
    assert not (tmp_path / "o").exists()
