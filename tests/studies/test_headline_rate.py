"""A study leaderboard's headline reads the rate its method says the name stands for (``MethodResults.
headline_rate``: word-importance's ``asr[max]``), else the rate of that name."""

from __future__ import annotations

from robusteval.methods import method_named
from robusteval.report.method_results import MethodResults
from robusteval.report.model import Num, Rate
from robusteval.studies.leaderboard import _headline_rate

RATES = [Rate("asr[0.05]", Num(0.1, n=10)), Rate("asr[0.3]", Num(0.4, n=10)), Rate("asr[0.1]", Num(0.2, n=10))]


def test_wordimportances_headline_is_its_rate_at_the_largest_alpha() -> None:
    spec = method_named("wordimportance")
    assert spec is not None
    own = spec.load_results()
    assert [metric for metric, _ in spec.headlines] == ["asr[max]"]
    picked = _headline_rate(RATES, "asr[max]", own)
    assert picked is not None and picked.metric == "asr[0.3]"  # by α's value, not the text
    assert _headline_rate(RATES, "asr[0.1]", own) is RATES[2]  # a rate's own name reads as itself
    assert _headline_rate([], "asr[max]", own) is None


def test_without_a_methods_hook_a_headline_is_the_rate_of_its_name() -> None:
    assert _headline_rate(RATES, "asr[max]", None) is None
    assert _headline_rate(RATES, "asr[0.05]", MethodResults(rates=lambda run: [])) is RATES[0]
