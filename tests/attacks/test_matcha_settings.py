"""MATCHA's settings are declared once (issue 38, item 3): the run config a user builds and the resolved
hyper-parameters the attack runs with inherit them from one class; their values are checked in one place; and the
identities and summaries they make are the ones the two separate declarations made (pinned: computed with the
commit before, 916e4a8)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest

from robusteval.attacks.matcha.config import MatchaConfig, MatchaRunConfig
from robusteval.attacks.matcha.settings import LIBRARY_DEFAULTS, MatchaSettings
from robusteval.config import ConfigError, identity_fields
from robusteval.data.spec import DataSpec
from robusteval.evals.prompt_options import PROMPT_KEYS
from robusteval.judging import JUDGE_KEYS
from robusteval.models.generation import GENERATION_KEYS, GenerationOptions
from robusteval.text.thinking import ReasoningOptions

#: name -> (run config keywords, sha256[:16] of: its identity fields, the resolved identity record without and
#: with a thinking target, the summary's hyper-parameters of a thinking target).
CASES: dict[str, tuple[dict[str, Any], tuple[str, str, str, str]]] = {
    "default": ({"data": DataSpec("gsm8k")},
                ("1bc0acc65527ddf0", "457d7bd70dd60625", "52b615a1c26fd1ce", "43a27755d5811c0f")),
    "embedding": ({"data": DataSpec("strategyqa"), "level": "embedding", "epsilon": 0.01, "steps": 3},
                  ("534174734413ffb4", "e0c054731559acb6", "051da62136ae31c5", "c98940896776f9a5")),
    "authors_token": ({"data": DataSpec("singleeq"), "counting": "authors", "success_check": "insertion-and-final"},
                      ("4fdfc0fb102cee1e", "6c6cb10bc45c5113", "f5ebd069e6c7a162", "c6cd2ad9621f6777")),
    "authors_emb": ({"data": DataSpec("gsm8k"), "level": "embedding", "counting": "authors", "random_start": True},
                    ("12227c1976cac59b", "f81c2c76177c35d1", "f7fb75b25338cc5f", "811210308e7f2327")),
    "paper": ({"data": DataSpec("gsm8k"), "preset": "paper"},
              ("dc15fb99a5e6629d", "8cda61392bf03ad0", "09e1b244b6bfbc1e", "8624625d9cc1972c")),
    "authors_preset": ({"data": DataSpec("gsm8k"), "preset": "authors"},
                       ("476c2ad0660515a5", "9c5e9012b4c41e73", "92a2971f011cffdd", "00dd7e1c45b1cfc4")),
    "fast_drift": ({"data": DataSpec("gsm8k"), "preset": "fast", "max_drift": 0.3, "n_candidates": 4,
                    "answer_loss": "n3"},
                   ("744c64c3f45928dc", "1a21a7046b595142", "339d679cfb0725fe", "228aa197dc453766")),
    "emb_authors_preset": ({"data": DataSpec("singleeq"), "level": "embedding", "preset": "authors"},
                           ("53be9c0b0e558a12", "f81c2c76177c35d1", "f7fb75b25338cc5f", "811210308e7f2327")),
}


def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


@pytest.mark.parametrize("case", sorted(CASES))
def test_identities_and_summaries_are_those_of_the_two_declarations(case: str) -> None:
    keywords, pinned = CASES[case]
    config = MatchaRunConfig(**keywords)
    plain, thinking = config.hyperparameters(), config.hyperparameters(thinks=True)
    assert (_hash(identity_fields(config)), _hash(plain.identity_record()), _hash(thinking.identity_record()),
            _hash(thinking.record())) == pinned
    assert "eps_fraction" in plain.record() and "epsilon" not in plain.record()  # the recorded name, as before


def test_each_setting_is_declared_once() -> None:
    run, resolved = ({f.name: f for f in dataclasses.fields(c)} for c in (MatchaRunConfig, MatchaConfig))
    nested_in_both = {"generation", "thinking"}  # shared blocks, each declared once in its own class
    assert all(run[name].metadata["nested"] and resolved[name].metadata["nested"] for name in nested_in_both)
    shared = run.keys() & resolved.keys() - nested_in_both
    assert shared == {f.name for f in dataclasses.fields(MatchaSettings)}
    for name in shared:  # inherited, not declared again: the very field of MatchaSettings
        assert run[name] is resolved[name] is MatchaSettings.__dataclass_fields__[name]
    # What the resolved config adds on its own is neither a shared block's key nor a thinking option: those
    # blocks are nested in it, as in the run config.
    blocks = set(GENERATION_KEYS) | set(JUDGE_KEYS) | set(PROMPT_KEYS) | {
        f.name for f in dataclasses.fields(ReasoningOptions)}
    own = resolved.keys() - shared - nested_in_both
    assert not own & blocks, sorted(own & blocks)
    assert set(LIBRARY_DEFAULTS) <= shared


def test_the_resolved_config_fills_what_the_run_config_leaves_unset() -> None:
    unset = MatchaRunConfig(data=DataSpec("jsonl", "x.jsonl", answer_type="number"))
    assert unset.steps is None and unset.insert_ratio is None
    hyper = unset.hyperparameters()
    assert all(getattr(hyper, name) is not None for name in LIBRARY_DEFAULTS)
    assert (hyper.count("steps"), hyper.real("insert_ratio"), hyper.choice("answer_loss")) == (5, 0.2, "answer")
    assert hyper.max_new_tokens == 256  # the generation block's default, read under its flat name
    # the dataset's paper defaults come before the library's
    assert MatchaRunConfig(data=DataSpec("strategyqa")).hyperparameters().real("epsilon") == 0.03
    assert MatchaConfig(generation=GenerationOptions(max_new_tokens=9)).generation.budget() == 9


@pytest.mark.parametrize(("values", "field"), [({"steps": -1}, "steps"), ({"variant": "ful"}, "variant"),
                                               ({"epsilon": 0.0}, "epsilon"), ({"counting": "theirs"}, "counting"),
                                               ({"max_drift": -0.1}, "max_drift")])
def test_a_bad_value_is_refused_once_in_the_words_of_the_config_given(values: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError) as run:
        MatchaRunConfig(data=DataSpec("gsm8k"), **values)
    with pytest.raises(ConfigError) as resolved:
        MatchaConfig(**values)
    assert run.value.config_type is MatchaRunConfig and resolved.value.config_type is MatchaConfig
    assert run.value.field == resolved.value.field == field
    assert run.value.problem == resolved.value.problem


def test_the_resolved_config_refuses_an_unresolved_target() -> None:
    with pytest.raises(ConfigError, match="target_answer"):
        MatchaConfig(target_answer="auto")
    # the run config resolves it (gold unless told the clean answers)
    assert MatchaRunConfig(data=DataSpec("gsm8k"), target_answer="auto").hyperparameters().target_answer == "gold"


def test_the_attacks_own_records_default_to_what_the_resolved_config_holds() -> None:
    """The token and embedding attacks' records (built from a MatchaConfig by the pipeline; a notebook may build
    them directly) take their defaults from the one table the resolution fills from."""
    from robusteval.attacks.matcha.embedding import EmbeddingAttackConfig
    from robusteval.attacks.matcha.token import TokenAttackConfig

    hyper, token, embedding = MatchaConfig(), TokenAttackConfig(), EmbeddingAttackConfig()
    for name in ("variant", "insert_ratio", "topk_ratio", "steps", "n_candidates", "max_redraws", "success_check"):
        assert getattr(token, name) == getattr(hyper, name), name
    assert (embedding.eps_fraction, embedding.step_fraction, embedding.steps, embedding.random_start,
            embedding.eps_base) == (hyper.epsilon, hyper.step_fraction, hyper.steps, hyper.random_start,
                                    hyper.eps_base)
