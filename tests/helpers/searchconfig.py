"""MATCHA's search settings for a command line: since they became ``--config`` keys (their flags deprecated, each
printing a notice), a test that reads the command's stderr gives them in a TOML file beside the run directory."""

from __future__ import annotations

import json
from pathlib import Path


def search_config(out: Path, **settings: object) -> list[str]:
    """``["--config", FILE]`` where FILE (beside ``out``) sets ``settings`` (``steps=5``)."""
    path = out.parent / f"{out.name}.search.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items()), encoding="utf-8")
    return ["--config", str(path)]
