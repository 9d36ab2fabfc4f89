"""``--count authors``: the pieces of the MATCHA authors' code (uiuc-focal-lab/MATCHA, MIT) that robusteval does
differently by default, written afresh: what their judge reads, and how they insert tokens.

* :func:`answer_sentence` and :func:`cut_reasoning`: their judge input (``utils.get_answer`` and ``utils.return_cot``,
  U 567-572 and 595-603): ``"The answer is "`` and the next space-delimited word of a completion *they choose*
  (the clean completion; at the final check after the gradient steps, the insertion checkpoint's), and the text
  after the first occurrence of that sentence up to its next occurrence, cut at the next ``Q:``; the whole
  completion when it has no ``"The answer is "`` (lower-case too) or not that sentence.
  :func:`reasoning_after_answer` collapses repeated sentences (their ``utils.remove_repeated_phrases``).
* :func:`authors_insertions`: one random token at a time, drawn from the whole vocabulary less special tokens, at a
  random slot over the question and the answer trigger, ``int(a x n)`` of them (at least one), where ``n`` and the
  first slot come from their tokenisation (:func:`first_slot`), the semantic gate asked after each token against
  the span as it was before that token, a refused token drawn again (they redraw without bound; here
  ``max_redraws`` times, then that token is given up).

The success rule and the denominators are metrics (:func:`robusteval.metrics.matcha.authors_outcome`).
docs/matcha.md lists, with file and line on both sides, what still differs from their code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np
import torch

from robusteval.attacks.matcha.lockstep import Gate
from robusteval.models.tokenization import tokenize_with_offsets

#: The next exemplar's question marker: the completion's reasoning ends there (their ``split('Q:')[0]``).
EXEMPLAR_MARKER = "Q:"
#: A sentence (letters, digits, spaces and light punctuation, ending in . ! or ?) repeated right after itself.
_REPEATED = re.compile(r"(\b[\w\s.,'\"]+?[.!?])(?:\s*\1)+")
#: Their slots stop short of the prompt's last tokens: insertion before token i of the question and trigger for
#: i <= len - 3 (``rest = [i + 1 for i in range(length_query + step - 2 - length_in_context)]``).
TRIGGER_TAIL_KEPT = 3
#: Their semantic gate reads the span less its last two tokens (IRD 509, 521, 612: ``length_query - 2 + step``).
GATE_TAIL_LEFT_OUT = 2


def gate_view(ids: Sequence[int]) -> list[int]:
    """The ids their semantic gate decodes of a span (question and trigger): all but the last two."""
    return list(ids[: max(1, len(ids) - GATE_TAIL_LEFT_OUT)])


def collapse_repeats(text: str) -> str:
    """``"7 shelves. 7 shelves. 7 shelves."`` -> ``"7 shelves."``: a sentence repeated back to back kept once."""
    return _REPEATED.sub(r"\1", text)


#: What their answer sentence starts with (``utils.get_answer``); a completion without it is read whole.
ANSWER_OPENING = "The answer is "


def answer_sentence(completion: str) -> str:
    """Their answer sentence of ``completion`` (U 567-572): ``"The answer is "`` and the text after it up to the next
    space (``"The answer is 18"`` of ``"The answer is 18 because"``, ``"The answer is $18."`` of ``"... $18. So"``);
    just ``"The answer is "`` when the completion has none."""
    if ANSWER_OPENING not in completion:
        return ANSWER_OPENING
    return ANSWER_OPENING + completion.split(ANSWER_OPENING)[1].split(" ")[0]


def cut_reasoning(completion: str, sentence: str) -> str:
    """Their ``return_cot`` (U 595-603): the text between the first and the second occurrence of ``sentence`` in
    ``completion``, cut at the next ``Q:``, stripped; the whole completion, stripped, when it holds no
    ``"The answer is "`` or not ``sentence``."""
    parts = completion.split(sentence) if ANSWER_OPENING in completion else []
    if len(parts) < 2:
        return completion.strip()
    return parts[1].split(EXEMPLAR_MARKER)[0].strip()


def reasoning_after_answer(completion: str, sentence: str) -> str:
    """What their judge reads of ``completion``: :func:`cut_reasoning` after ``sentence``, repeated sentences
    collapsed. Empty when nothing follows the sentence (their rule then counts a success)."""
    return collapse_repeats(cut_reasoning(completion, sentence)).strip()


def authors_reasoning(completion: str, sentence_from: str | None = None) -> str:
    """:func:`reasoning_after_answer` of ``completion`` after the answer sentence of ``sentence_from`` (default:
    the completion itself: the clean completion is cut after its own sentence)."""
    return reasoning_after_answer(completion, answer_sentence(completion if sentence_from is None else sentence_from))


#: The verdict of an empty reasoning: wrong, without asking the judge (their ``auto_rater_gpt`` returns 0).
EMPTY_REASONING_VERDICT = {"reasoning_correct": False, "label": False, "judge": "authors-rule", "raw": "",
                           "detail": {"rule": "empty reasoning counts as wrong"}}


def authors_verdicts(items: Sequence[tuple[str, str, str]],
                     judge: Callable[[list[tuple[str, str, str]]], list[dict[str, Any]]],
                     sentences_from: Sequence[str | None] | None = None) -> list[dict[str, Any]]:
    """Reasoning verdicts of (question, clean completion, perturbed completion) items by the authors' rule: the
    judge (whose spec ORs ``arith`` into the LLM) reads the two reasonings only; an empty reasoning on either side
    is wrong without asking. Both are cut after the clean completion's answer sentence, the perturbed one after
    that of ``sentences_from[k]`` where given (their final check: the insertion checkpoint's completion, IRD
    579-582, 665). Each verdict keeps the texts and the sentences under ``authors``."""
    sources = list(sentences_from) if sentences_from is not None else [None] * len(items)
    sentences = [(answer_sentence(clean), answer_sentence(clean if source is None else source))
                 for (_, clean, _), source in zip(items, sources, strict=True)]
    pairs = [(question, reasoning_after_answer(clean, ref), reasoning_after_answer(perturbed, cand))
             for (question, clean, perturbed), (ref, cand) in zip(items, sentences, strict=True)]
    asked = [k for k, (_, reference, candidate) in enumerate(pairs) if reference and candidate]
    answers = dict(zip(asked, judge([pairs[k] for k in asked]) if asked else [], strict=True))
    out = []
    for k, (_, reference, candidate) in enumerate(pairs):
        texts = {"reference_reasoning": reference, "candidate_reasoning": candidate,
                 "empty_reasoning": not (reference and candidate), "reference_sentence": sentences[k][0],
                 "candidate_sentence": sentences[k][1],
                 "candidate_sentence_from": "clean" if sources[k] is None else "insertion checkpoint"}
        out.append({**(answers.get(k) or EMPTY_REASONING_VERDICT), "authors": texts})
    return out


def vocabulary_ids(tokenizer: Any) -> torch.Tensor:
    """Every token id of the base vocabulary less the special ones: what their insertions draw from
    (``torch.randint(0, tokenizer.vocab_size)``; special tokens are left out here so no BOS/EOS is inserted)."""
    special = set(tokenizer.all_special_ids)
    size = int(getattr(tokenizer, "vocab_size", 0) or len(tokenizer))
    ids = [i for i in range(size) if i not in special]
    if not ids:
        raise ValueError("the tokenizer has no ordinary tokens to insert")
    return torch.tensor(ids, dtype=torch.long)


def first_slot(prompt_tokens: int, context_tokens: int, question_start: int) -> int:
    """The first span index their insertions may use (IRD 399-401, 513-514): their slots are the full-prompt
    indices ``len(tok(prefix + "Q: ")) .. len - 3``, i.e. from ``context_tokens - question_start`` on in the span
    (``context_tokens``: the prefix and ``"Q: "`` tokenised alone, BOS included; ``question_start``: where the
    question starts in the whole prompt's ids). ``"Q: "`` alone ends in a lone space token that the whole prompt
    merges into the first question word, so this is 1: they never insert before the first question token.
    ``prompt_tokens`` (the whole prompt) bounds it."""
    return max(0, min(context_tokens - question_start, prompt_tokens - question_start))


def authors_first_slot(backend: Any, prompt: Any, layout: Any) -> int:
    """:func:`first_slot` of a raw few-shot prompt's layout (``prompt``: its segments; ``backend``: its tokenizer
    and BOS): their ``len(tok(prefix + "Q: "))`` against where the question starts in the whole prompt's ids."""
    prefix, head, _, _ = prompt.segments("")
    context = len(backend.bos_ids) + len(tokenize_with_offsets(backend.tokenizer, prefix + head)[0])
    return first_slot(len(layout.ids), context, len(layout.prefix) + len(layout.head))


def insertion_count(insert_ratio: float, question_tokens: int, trigger_tokens: int, first: int = 0) -> int:
    """``int(a x n)``, at least one (their ``add_tok_num``, IRD 495-497), where ``n`` = question + trigger tokens
    less ``first`` (:func:`first_slot`): their ``len(tok(prompt)) - len(tok(prefix + "Q: "))``."""
    return max(1, int(insert_ratio * (question_tokens + trigger_tokens - first)))


def insertion_slots(length: int, first: int = 0) -> range:
    """Where a token may go in an editable span of ``length`` tokens (question, then trigger): before token i for
    ``first <= i <= length - TRIGGER_TAIL_KEPT`` (``first`` at least)."""
    return range(first, max(first, length - TRIGGER_TAIL_KEPT) + 1)


def authors_insertions(
    ids: list[int],
    n_insert: int,
    vocabulary: Sequence[int],
    rng: np.random.Generator,
    max_redraws: int,
    decode: Callable[[list[int]], str],
    first: int = 0,
) -> Generator[Gate, tuple[bool, dict[str, Any]], tuple[list[int], list[int], list[dict[str, Any]]]]:
    """Insert ``n_insert`` tokens one at a time into ``ids`` (question + trigger), each gated against the span as it
    was before it, at the slots of :func:`insertion_slots` from ``first``; returns (ids, inserted positions, every
    draw). A token refused ``max_redraws + 1`` times is given up (recorded as such)."""
    inserted: list[int] = []
    draws: list[dict[str, Any]] = []
    for index in range(n_insert):
        for attempt in range(max_redraws + 1):
            slots = insertion_slots(len(ids), first)
            slot = int(slots[int(rng.integers(0, len(slots)))])
            token = int(vocabulary[int(rng.integers(0, len(vocabulary)))])
            candidate = [*ids[:slot], token, *ids[slot:]]
            accepted, verdict = yield Gate(candidate, against=list(ids))
            draws.append({"insertion": index, "attempt": attempt, "slot": slot, "tokens": [token],
                          "token_texts": [decode([token])], "accepted": accepted, "semantic": verdict})
            if accepted:
                inserted = sorted([p + 1 if p >= slot else p for p in inserted] + [slot])
                ids = candidate
                break
        else:
            draws[-1]["given_up"] = True
    return ids, inserted, draws
