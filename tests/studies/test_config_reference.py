"""docs/config-reference.md is generated from the config classes and up to date (issue 38): every option of every
method's config is documented there, the ones --help leaves out included."""

from __future__ import annotations

from pathlib import Path

from helpers.configkeys import leaf_keys
from robusteval.studies.configref import reference, sections

DOC = Path(__file__).resolve().parents[2] / "docs" / "config-reference.md"


def test_the_reference_is_up_to_date() -> None:
    assert DOC.read_text(encoding="utf-8") == reference(), (
        "docs/config-reference.md is stale: python -m robusteval.studies.configref docs/config-reference.md")


def test_every_option_of_every_config_has_a_row_with_its_help() -> None:
    text = reference()
    titles = [title for title, _ in sections()]
    assert {"method `matcha`", "method `eval`", "method `wordimportance`", "command `transfer`"} <= set(titles)
    for title, config_type in sections():
        section = text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
        for key in leaf_keys(config_type):
            row = next((line for line in section.splitlines() if line.startswith(f"| `{key}` |")), None)
            assert row is not None, f"{title}: {key} undocumented"
    matcha = text.split("## method `matcha`\n", 1)[1].split("\n## ", 1)[0]
    assert "| `steps` | int or unset | unset | `--config` (`--steps` deprecated) |" in matcha
    assert "| `max_new_tokens` | int or unset | unset | `--max-new-tokens` |" in matcha
    assert '| `sample` | `500` | dataset strategyqa |' in text
