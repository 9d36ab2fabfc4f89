"""Fixtures of the report tests: real tiny-model runs of every method, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.reportruns import make_llm_runs, make_nli_runs
from helpers.shared import require_modules


@pytest.fixture(scope="session")
def llm_runs(tmp_path_factory: pytest.TempPathFactory, tiny_trained_dir: Path, tiny_llama_dir: Path
             ) -> dict[str, Path]:
    return make_llm_runs(tmp_path_factory.mktemp("report-llm"), tiny_trained_dir, tiny_llama_dir)


@pytest.fixture(scope="session")
def nli_runs(tmp_path_factory: pytest.TempPathFactory, tiny_nli_dir: Path) -> dict[str, Path]:
    require_modules("pypinyin")  # the Chinese perturbations (zh extra)
    return make_nli_runs(tmp_path_factory.mktemp("report-nli"), tiny_nli_dir)


@pytest.fixture(scope="session")
def all_runs(llm_runs: dict[str, Path], nli_runs: dict[str, Path]) -> dict[str, Path]:
    return {**llm_runs, **nli_runs}
