"""The sequence an attack optimises over and the loss it evaluates.

Layout (token ids; spans are data, never re-tokenised guesses)::

    [BOS + exemplars]  [ "Q:" ]  [ question (perturbed) ]  [ "\\nA:" ]  [ answer sentence | CoT ]
     cached prefix      head       the only editable span    tail        teacher-forced continuation

The prefix is encoded once (KV cache); every forward and backward pass runs over the rest only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from robusteval.attacks.matcha.loss import LossTerms, loss_weight, matcha_loss

# Budget for one chunk of candidate logits (floats): batch * positions * vocabulary.
_LOGIT_BUDGET = 60_000_000
_ORDINARY = re.compile(r" ?[A-Za-z]{2,14}")


def ordinary_token_ids(tokenizer) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """Ids of tokens that decode to a plain word (optionally space-prefixed): what insertion may use.

    Special, control, byte, digit and punctuation tokens are excluded so perturbations stay ordinary text
    and never change a number in the question.
    """
    special = set(tokenizer.all_special_ids)
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    words, spaced = [], []
    for token_id, piece in enumerate(vocab):
        if token_id in special or piece is None:
            continue
        text = piece.replace("\u2581", " ").replace("\u0120", " ")  # sentencepiece / byte-level space marks
        if _ORDINARY.fullmatch(text):
            words.append(token_id)
            if text.startswith(" "):
                spaced.append(token_id)
    # Whole words with their own leading space read as inserted words instead of gluing onto a neighbour.
    keep = spaced if len(spaced) >= 20 else words
    if not keep:
        raise ValueError("the tokenizer has no plain-word tokens to insert")
    return torch.tensor(keep, dtype=torch.long)


@dataclass
class Reference:
    """The clean run an attack is measured against."""

    question_ids: list[int]
    continuation_ids: list[int]  # answer sentence + CoT, exactly as the model generated them
    n_answer: int  # how many continuation tokens belong to the answer sentence

    def positions(self, prefix_len: int, head_len: int, tail_len: int) -> tuple[int, int]:
        """(n3, n4): absolute end of the answer and end of the CoT in the clean sequence."""
        n3 = prefix_len + head_len + len(self.question_ids) + tail_len + self.n_answer
        return n3, n3 + len(self.continuation_ids) - self.n_answer


class MatchaObjective:
    """L_opt = L_c - lambda * L_a for perturbed versions of one question (see ``loss.py``)."""

    def __init__(
        self,
        backend,  # type: ignore[no-untyped-def]  # HFBackend (white-box)
        prefix_ids: Sequence[int],
        head_ids: Sequence[int],
        tail_ids: Sequence[int],
        reference: Reference,
        *,
        lam: float | None = None,
        candidate_chunk: int | None = None,
        answer_loss: str = "answer",
    ):
        if not reference.continuation_ids:
            raise ValueError("the clean continuation is empty")
        self.backend = backend
        self.candidate_chunk = candidate_chunk  # None: as many as the logit memory budget allows
        self.prefix_ids = list(prefix_ids)
        self.head_ids = list(head_ids)
        self.tail_ids = list(tail_ids)
        self.reference = reference
        self.m = len(reference.continuation_ids)
        n3, n4 = reference.positions(len(prefix_ids), len(head_ids), len(tail_ids))
        self.n3, self.n4 = n3, n4
        self.lam = loss_weight(n3, n4) if lam is None else lam
        self.answer_norm = n3 if answer_loss == "n3" else None
        with torch.no_grad():
            self.head = backend.embed(torch.tensor(list(head_ids)))
            # The last continuation token is never an input: nothing after it is predicted.
            self.tail = backend.embed(torch.tensor(list(tail_ids) + reference.continuation_ids[:-1]))
            self.reference_logits = self.logits(self.embed_question([reference.question_ids]))[0]

    # ------------------------------------------------------------------ building blocks
    def embed_question(self, batch_ids: Sequence[Sequence[int]]) -> torch.Tensor:
        return self.backend.embed(torch.tensor([list(ids) for ids in batch_ids]))

    def logits(self, question_embeds: torch.Tensor) -> torch.Tensor:
        """Logits [B, m, V] at the positions that predict the continuation tokens."""
        batch = question_embeds.shape[0]
        suffix = torch.cat(
            [self.head.expand(batch, -1, -1), question_embeds, self.tail.expand(batch, -1, -1)], dim=1
        )
        return self.backend.forward(self.prefix_ids, suffix, logits_to_keep=self.m)

    def loss(self, question_embeds: torch.Tensor) -> LossTerms:
        return matcha_loss(self.logits(question_embeds), self.reference_logits, self.reference.n_answer, self.lam,
                           self.answer_norm)

    # ------------------------------------------------------------------ attack primitives
    def embedding_gradient(self, question_ids: Sequence[int]) -> tuple[torch.Tensor, LossTerms]:
        """d(-L_opt)/d(question embeddings) [Lq, H] and the loss terms at ``question_ids``.

        The one-hot gradient the token attack needs is this times the (scaled) embedding matrix, computed
        only for the rows and tokens it scores, instead of a [Lq, V] one-hot matmul.
        """
        return self.embedding_gradient_of_embeds(self.embed_question([question_ids])[0])

    def embedding_gradient_of_embeds(self, question_embeds: torch.Tensor) -> tuple[torch.Tensor, LossTerms]:
        """d(-L_opt)/d(question embeddings) at arbitrary embeddings [Lq, H] (the embedding attack's step)."""
        embeds = question_embeds.detach().unsqueeze(0).requires_grad_(True)
        terms = self.loss(embeds)
        (grad,) = torch.autograd.grad(-terms.total.sum(), embeds)
        return grad[0], LossTerms(terms.total.detach()[0], terms.cot.detach()[0], terms.answer.detach()[0])

    @torch.no_grad()
    def losses(self, batch_ids: Sequence[Sequence[int]]) -> torch.Tensor:
        """L_opt of many equal-length candidate questions, in chunks that bound logit memory."""
        vocab = self.reference_logits.shape[-1]
        chunk = self.candidate_chunk or max(1, _LOGIT_BUDGET // max(1, self.m * vocab))
        out = []
        for start in range(0, len(batch_ids), chunk):
            out.append(self.loss(self.embed_question(batch_ids[start : start + chunk])).total)
        return torch.cat(out) if out else torch.empty(0)
