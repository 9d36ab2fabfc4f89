"""What ``robusteval study`` runs in a prompt-robustness cell, one study method per mode: the same config class,
identity and pipeline its ``robusteval prompt-robustness --mode ...`` command uses, on classification data. In the
studies layer (``SUBLAYERS`` of ``tests/test_import_layers.py``): it builds a
:class:`~robusteval.studies.methods.Method`; the headlines come from the registration."""

from __future__ import annotations

from robusteval.studies.methods import Method


def perturb() -> Method:
    """``prompt-robustness``: perturbed copies of one surface of the prompt (``--mode perturb``)."""
    from robusteval.evals.prompt_robustness.config import PromptRobustnessConfig
    from robusteval.evals.prompt_robustness.pipeline import (
        prompt_robustness,
        prompt_robustness_identity,
        prompt_robustness_info,
    )

    return Method("prompt-robustness", PromptRobustnessConfig, "label", prompt_robustness_identity,
                  lambda c, b, s, load, bs: prompt_robustness(c, b, s, load_model=load, batch_size=bs), (),
                  run_info=prompt_robustness_info)


def search() -> Method:
    """``prompt-search``: the adversarial instruction under a query budget (``--mode search``)."""
    from robusteval.evals.prompt_robustness.config import PromptSearchConfig
    from robusteval.evals.prompt_robustness.search_pipeline import prompt_search, prompt_search_identity

    return Method("prompt-search", PromptSearchConfig, "label", prompt_search_identity,
                  lambda c, b, s, load, bs: prompt_search(c, b, s, batch_size=bs), ())


def spread() -> Method:
    """``prompt-spread``: equivalent prompts and formats (``--mode spread``)."""
    from robusteval.evals.prompt_robustness.config import PromptSpreadConfig
    from robusteval.evals.prompt_robustness.spread_pipeline import prompt_spread, prompt_spread_identity

    return Method("prompt-spread", PromptSpreadConfig, "label", prompt_spread_identity,
                  lambda c, b, s, load, bs: prompt_spread(c, b, s, batch_size=bs), ())
