"""``judges audit``'s config nests the shared judge block (issue 38, item 3): it declares none of the block's keys
itself, the block checks them once, the command's flags and ``--config`` keys stay as they were, and the run
identity is the one of before."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from helpers.runs import cli_inproc
from robusteval.config import ConfigError, identity_fields
from robusteval.judges.audit import AuditConfig, audit_identity
from robusteval.judging import JUDGE_KEYS, JudgeOptions
from robusteval.store import SUMMARY_NAME, RunStore

LABELLED = str(Path(__file__).resolve().parents[1] / "data" / "judge_audit.jsonl")
PROMPT = "Judge $question\n$reference\n$candidate\nRating:"
#: (judge block, sha256[:16] of identity_fields, of audit_identity(config, "x")): computed with the audit's own
#: flat fields, at the commit before it nested the block (faf32a7).
CASES: dict[str, tuple[dict[str, Any], str, str]] = {
    "plain": ({"judge": "arith"}, "b20dd3798c97a303", "51b05d4a5661b698"),
    "llm": ({"judge": "arith+hf:judge", "judge_chat": True, "judge_retries": 2, "judge_max_thinking_tokens": 64,
             "error_classifier": "hf:cls"}, "2e57627c803a9d37", "c919b0b238ab9b09"),
    "prompt": ({"judge": "hf:judge", "judge_prompt": "PROMPT", "judge_retries": 0}, "c1a65e54a183016d",
               "7c2f1d491fbd4721"),
}


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def test_the_audit_declares_no_judge_setting_itself() -> None:
    own = {field.name for field in dataclasses.fields(AuditConfig)}
    assert own & set(JUDGE_KEYS) == set() and "judging" in own


@pytest.mark.parametrize("case", sorted(CASES))
def test_flat_or_nested_the_audit_keeps_its_identity(case: str, tmp_path: Path) -> None:
    judging, fields_hash, identity_hash = CASES[case]
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(PROMPT, encoding="utf-8")
    judging = {k: str(prompt) if v == "PROMPT" else v for k, v in judging.items()}
    nested = AuditConfig(LABELLED, judging=JudgeOptions(**judging))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        flat = AuditConfig(LABELLED, **judging)
    assert flat == nested and flat.judge == judging["judge"]
    # The prompt file is recorded by its content's hash, not its path (which may move).
    assert "judge_prompt" not in identity_fields(nested)
    assert _hash(identity_fields(nested)) == fields_hash and _hash(audit_identity(nested, "x")) == identity_hash


def test_the_judge_is_required_and_a_bad_setting_is_refused_once_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"^AuditConfig.judge: required"):
        AuditConfig(LABELLED)
    with pytest.raises(ConfigError, match=r"^JudgeOptions.judge_retries: must be a number >= 0, got -1$"):
        AuditConfig(LABELLED, judging=JudgeOptions(judge="arith", judge_retries=-1))
    with pytest.raises(ConfigError, match=r"^AuditConfig.judge_retries: must be a number >= 0, got -1$"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        AuditConfig(LABELLED, judge="arith", judge_retries=-1)
    with pytest.raises(ConfigError, match=r"^AuditConfig.semantic_judge: is not a setting of AuditConfig"):
        AuditConfig(LABELLED, judging=JudgeOptions(judge="arith", semantic_judge="none"))


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("robusteval: error:")]


def test_the_command_names_its_flags_shows_them_and_requires_the_judge(tmp_path: Path) -> None:
    bad = cli_inproc("judges", "audit", "--judge", "arith", "--labelled", LABELLED, "--judge-retries", "-1",
                     "--out", str(tmp_path / "never"))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "deprecated" not in bad.stderr
    assert _errors(bad.stderr) == ["robusteval: error: --judge-retries: must be a number >= 0, got -1"], bad.stderr
    missing = cli_inproc("judges", "audit", "--labelled", LABELLED)
    assert missing.returncode == 2 and "error: missing --judge (" in missing.stderr, missing.stderr
    shown = cli_inproc("judges", "audit", "--help").stdout
    usage = shown.split("\n\n")[0]
    for flag in ("[--judge ", "[--judge-chat]", "[--judge-prompt ", "[--judge-retries ", "[--judge-max-thinking-tokens ",
                 "[--error-classifier ", "[--labelled "):
        assert flag in usage
    assert "deprecated" not in shown and "--semantic-judge" not in usage and "--unreadable-verdicts" not in usage
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("table", ["", "[judging]\n"])
def test_a_config_file_gives_the_judge_keys_flat_or_as_a_table(tmp_path: Path, table: str) -> None:
    config = tmp_path / "audit.toml"
    config.write_text(f'labelled = "{LABELLED}"\n{table}judge = "arith"\njudge_retries = 1\n', encoding="utf-8")
    result = cli_inproc("judges", "audit", "--config", str(config), "--out", str(tmp_path / "run"))
    assert result.returncode == 0 and "deprecated" not in result.stderr, result.stderr[-2000:]
    summary = json.loads((tmp_path / "run" / SUMMARY_NAME).read_text(encoding="utf-8"))
    identity = RunStore.stored_identity(tmp_path / "run")
    assert summary["judge_spec"] == "arith" and identity is not None and identity["judge_retries"] == 1
