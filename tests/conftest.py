"""Shared pytest fixtures.

``tests/`` goes on ``sys.path`` so test modules can ``from helpers.servers import ...`` without
``__init__.py`` files (works whatever pytest's import mode or rootdir).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from hypothesis import settings

_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from helpers.mounts import namespace  # noqa: E402, F401  (a fixture for every test module)
from helpers.servers import build_tiny_served_model, serve_transformers  # noqa: E402
from helpers.shared import require_modules  # noqa: E402

# Tiny models are dominated by per-op overhead: one thread is faster and avoids oversubscribing 2 cores.
torch.set_num_threads(1)

# Hypothesis runs the same examples every time (seeded from each test's name), and no example database
# carries failures from one run into the next. Loaded before test modules are imported, so their own
# @settings(max_examples=...) inherit it.
settings.register_profile("robusteval", derandomize=True, database=None, deadline=None)
settings.load_profile("robusteval")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow (always run under CI=1, as .ci/run sets)")


def _run_slow(config: pytest.Config) -> bool:
    return bool(config.getoption("--runslow")) or os.environ.get("CI", "") not in ("", "0", "false")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``slow`` tests are skipped in development (a fast default), run with ``--runslow`` and always in CI."""
    if _run_slow(config):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow (or CI=1)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs_modules(*names): optional packages the test needs; it skips without them, or fails "
        "under ROBUSTEVAL_REQUIRE_ALL=1 (helpers.shared.needs_modules)",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_modules"):
        require_modules(*mark.args)


@pytest.fixture(scope="session")
def tiny_served_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``transformers serve`` running a tiny random Llama: yields ``(base_url, model_name)``.

    One server for the whole session (startup ~5-10 s). Use as ``openai:{model_name}@{base_url}``;
    the server is pinned to this model and rejects other names. Generation is greedy-deterministic
    at temperature 0; outputs are random words from a ~40-word vocabulary.
    """
    model_dir = build_tiny_served_model(tmp_path_factory.mktemp("tiny_served") / "model")
    with serve_transformers(model_dir) as base_url:
        yield base_url, str(model_dir)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random 2-layer Llama + BPE tokenizer trained on the package's own text, saved to disk.

    Load it through the real path: ``load_backend(f"hf:{tiny_llama_dir}")``.
    """
    from robusteval.models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny_llama") / "model", seed=0)


@pytest.fixture(scope="session")
def tiny_backend(tiny_llama_dir: Path):  # type: ignore[no-untyped-def]
    from robusteval.models import load_backend

    return load_backend(f"hf:{tiny_llama_dir}")


@pytest.fixture(scope="session")
def tiny_trained_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama briefly trained on the answer-first math exemplars: it writes "The answer is N. …".

    Outputs are nonsense but in the format, so MATCHA has answers and chains of thought to attack.
    """
    from robusteval.models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny_trained") / "model", seed=0, train_steps=200)


@pytest.fixture(scope="session")
def tiny_thinking_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny reasoning model: trained to write ``<think> The answer is W. </think>`` (W wrong) before the
    answer-first reply, with a chat template in Qwen3's form (it names ``</think>``, so ``--reasoning auto`` finds
    it, and has an ``enable_thinking`` switch)."""
    from robusteval.models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny_thinking") / "model", seed=0, train_steps=400,
                            thinking=True)


@pytest.fixture(scope="session")
def tiny_r1_dir(tiny_thinking_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny reasoning model with a chat template in DeepSeek-R1-distill's form: the generation prompt opens
    ``<think>``, so completions hold only the closing tag."""
    import shutil

    from transformers import AutoTokenizer

    from robusteval.models.tiny import R1_CHAT_TEMPLATE

    out = tmp_path_factory.mktemp("tiny_r1") / "model"
    shutil.copytree(tiny_thinking_dir, out)
    tokenizer = AutoTokenizer.from_pretrained(out)
    tokenizer.chat_template = R1_CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Llama trained to answer a Chinese NLI prompt with a label word (built once, ~10-15 s).

    Rule: 不/没 in the hypothesis -> contradiction, 可能/也许 -> neutral, else entailment; any Chinese text
    still gets a label. Load with ``load_backend(f"hf:{tiny_nli_dir}")`` and
    ``ClassificationTemplate.load(str(tiny_nli_dir / "template.json"))``.
    """
    from robusteval.models.tiny import build_tiny_nli_classifier

    return build_tiny_nli_classifier(tmp_path_factory.mktemp("tiny_nli") / "model", seed=0)
