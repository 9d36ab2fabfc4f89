"""``--count authors``: the pieces of the MATCHA authors' code (uiuc-focal-lab/MATCHA, MIT) that robusteval does
differently by default, written afresh: what their judge reads, and how they insert tokens.

* :func:`reasoning_after_answer`: the reasoning their judge rates: the text after the answer sentence, cut at
  the next exemplar's ``Q:`` (their ``utils.return_cot``), with repeated sentences collapsed (their
  ``utils.remove_repeated_phrases``). No question.
* :func:`authors_insertions`: one random token at a time, drawn from the whole vocabulary less special tokens, at a
  random slot over the question and the answer trigger, ``int(a x (question + trigger tokens))`` of them (at least
  one), the semantic gate asked after each token against the question as it was before that token, a refused token
  drawn again (they redraw without bound; here ``max_redraws`` times, then that token is given up).

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
from robusteval.data.answers.extract import split_answer_and_cot

#: The next exemplar's question marker: the completion's reasoning ends there (their ``split('Q:')[0]``).
EXEMPLAR_MARKER = "Q:"
#: A sentence (letters, digits, spaces and light punctuation, ending in . ! or ?) repeated right after itself.
_REPEATED = re.compile(r"(\b[\w\s.,'\"]+?[.!?])(?:\s*\1)+")
#: Their slots stop short of the prompt's last tokens: insertion before token i of the question and trigger for
#: i <= len - 3 (``rest = [i + 1 for i in range(length_query + step - 2 - length_in_context)]``).
TRIGGER_TAIL_KEPT = 3


def collapse_repeats(text: str) -> str:
    """``"7 shelves. 7 shelves. 7 shelves."`` -> ``"7 shelves."``: a sentence repeated back to back kept once."""
    return _REPEATED.sub(r"\1", text)


def reasoning_after_answer(completion: str, answer_sentence: str) -> str:
    """The reasoning the authors' judge reads: after the first ``answer_sentence``, up to the next ``Q:``, repeats
    collapsed, stripped. Empty when nothing follows the answer (their rule then counts a success); the whole
    completion when the answer sentence is missing (their ``return_cot`` falls back to it)."""
    sentence = answer_sentence.strip()
    if sentence and sentence in completion:
        after = completion.split(sentence, 2)[1]  # up to a repeat of the sentence, as their split(a)[1]
        text = after.split(EXEMPLAR_MARKER)[0].strip()
    else:
        text = completion.strip()
    return collapse_repeats(text).strip()


def authors_reasoning(completion: str) -> str:
    """:func:`reasoning_after_answer` of an answer-first completion, after its own answer sentence."""
    return reasoning_after_answer(completion, split_answer_and_cot(completion)[0])


#: The verdict of an empty reasoning: wrong, without asking the judge (their ``auto_rater_gpt`` returns 0).
EMPTY_REASONING_VERDICT = {"reasoning_correct": False, "label": False, "judge": "authors-rule", "raw": "",
                           "detail": {"rule": "empty reasoning counts as wrong"}}


def authors_verdicts(items: Sequence[tuple[str, str, str]],
                     judge: Callable[[list[tuple[str, str, str]]], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Reasoning verdicts of (question, clean completion, perturbed completion) items by the authors' rule: the
    judge (whose spec ORs ``arith`` into the LLM) reads the two reasonings only; an empty reasoning on either side
    is wrong without asking. Each verdict keeps the texts under ``authors``."""
    pairs = [(question, authors_reasoning(clean), authors_reasoning(perturbed)) for question, clean, perturbed in items]
    asked = [k for k, (_, reference, candidate) in enumerate(pairs) if reference and candidate]
    answers = dict(zip(asked, judge([pairs[k] for k in asked]) if asked else [], strict=True))
    out = []
    for k, (_, reference, candidate) in enumerate(pairs):
        texts = {"reference_reasoning": reference, "candidate_reasoning": candidate,
                 "empty_reasoning": not (reference and candidate)}
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


def insertion_count(insert_ratio: float, question_tokens: int, trigger_tokens: int) -> int:
    """``int(a x (question + trigger tokens))``, at least one (their ``add_tok_num``)."""
    return max(1, int(insert_ratio * (question_tokens + trigger_tokens)))


def insertion_slots(length: int) -> range:
    """Where a token may go in an editable span of ``length`` tokens (question, then trigger): before token i for
    ``0 <= i <= length - TRIGGER_TAIL_KEPT`` (before the first question token at least)."""
    return range(0, max(0, length - TRIGGER_TAIL_KEPT) + 1)


def authors_insertions(
    ids: list[int],
    n_insert: int,
    vocabulary: Sequence[int],
    rng: np.random.Generator,
    max_redraws: int,
    decode: Callable[[list[int]], str],
) -> Generator[Gate, tuple[bool, dict[str, Any]], tuple[list[int], list[int], list[dict[str, Any]]]]:
    """Insert ``n_insert`` tokens one at a time into ``ids`` (question + trigger), each gated against the span as it
    was before it; returns (ids, inserted positions, every draw). A token refused ``max_redraws + 1`` times is
    given up (recorded as such)."""
    inserted: list[int] = []
    draws: list[dict[str, Any]] = []
    for index in range(n_insert):
        for attempt in range(max_redraws + 1):
            slots = insertion_slots(len(ids))
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
