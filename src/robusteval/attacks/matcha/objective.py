"""The sequence an attack optimises over and the loss it evaluates.

Layout (token ids; spans are data, never re-tokenised guesses)::

    [BOS + exemplars]  [ "Q:" ]  [ question (perturbed) ]  [ "\\nA:" ]  [ answer sentence | CoT ]
     cached prefix      head       the only editable span    tail        teacher-forced continuation

The prefix is encoded once (KV cache); every forward and backward pass runs over the rest only.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from robusteval.attacks.matcha.loss import (
    LossTerms,
    host_terms,
    loss_weight,
    matcha_loss,
    position_sums,
    terms_of_sums,
)
from robusteval.models.base import WhiteBoxBackend

_ORDINARY = re.compile(r" ?[A-Za-z]{2,14}")


#: tokenizer -> (its length, :func:`ordinary_token_ids`), held weakly: a scan of the whole vocabulary (0.25 s for
#: Llama 3's 128k entries) was made again by every run of the attack, every chunk of a resumed one.
_WORDS: weakref.WeakKeyDictionary[Any, tuple[int, torch.Tensor]] = weakref.WeakKeyDictionary()


def ordinary_token_ids(tokenizer) -> torch.Tensor:  # type: ignore[no-untyped-def]
    """Ids of tokens that decode to a plain word (optionally space-prefixed): what insertion may use.

    Special, control, byte, digit and punctuation tokens are excluded so perturbations stay ordinary text
    and never change a number in the question. Scanned once per tokenizer (again if tokens were added to it); the
    tensor is shared, never to be changed in place.
    """
    known = _WORDS.get(tokenizer)
    if known is None or known[0] != len(tokenizer):
        known = (len(tokenizer), _ordinary_token_ids(tokenizer))
        _WORDS[tokenizer] = known
    return known[1]


def _ordinary_token_ids(tokenizer) -> torch.Tensor:  # type: ignore[no-untyped-def]
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


def token_vectors(backend: WhiteBoxBackend, ids: torch.Tensor) -> torch.Tensor:
    """What the embedding layer feeds for ``ids``: their rows of the (scaled) embedding matrix [n, H], the rows of
    the one-hot gradient's matrix (d/d one-hot = d/d embeddings @ (scale x E)^T). Indexed first, then scaled: bit
    for bit the rows of the scaled matrix, without a copy of the whole [V, H] matrix (671 MB for Gemma 3 270M in
    float32, once per example attacked)."""
    weight = backend.embedding_matrix.detach()
    return weight[ids.to(weight.device)] * backend.embed_scale


#: (weak references to the objects it was made for, the value) of the last call of each :func:`_last_of` cache.
_Memo = list[tuple[tuple[Any, ...], Any]]
#: (backend, allowed ids) -> their vectors, of the last :func:`shared_token_vectors` call, held weakly.
_SHARED: _Memo = []
#: (allowed ids,) -> their host list, of the last :func:`shared_host_ids` call, held weakly.
_HOST_IDS: _Memo = []


def _last_of(cache: _Memo, keys: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """``make()``, computed again only when ``keys`` are not the very objects of the cache's last call; the keys
    are held weakly, and the value is let go with the last of them (unless a later call replaced it already)."""
    if cache and all(ref() is key for ref, key in zip(cache[0][0], keys, strict=True)):
        return cache[0][1]
    value = make()
    entry = (tuple(weakref.ref(key) for key in keys), value)
    cache[:] = [entry]
    weakref.finalize(keys[-1], lambda: cache.__setitem__(slice(None), [e for e in cache if e is not entry]))
    return value


def shared_token_vectors(backend: WhiteBoxBackend, allowed: torch.Tensor) -> torch.Tensor:
    """:func:`token_vectors` of the tokens insertion may use [A, H], computed once for every example attacked
    with the same backend and ``allowed`` tensor (a lock-step batch held one copy per example)."""
    return cast(torch.Tensor, _last_of(_SHARED, (backend, allowed), lambda: token_vectors(backend, allowed)))


def shared_host_ids(allowed: torch.Tensor) -> tuple[int, ...]:
    """The ids of ``allowed`` on the host, read once for every example attacked with the same tensor (each example
    of every batch copied the whole tensor from the device and built its list again)."""
    return cast(tuple[int, ...], _last_of(_HOST_IDS, (allowed,), lambda: tuple(allowed.tolist())))


@dataclass
class Reference:
    """The clean run an attack is measured against."""

    question_ids: list[int]
    continuation_ids: list[int]  # answer sentence + CoT, exactly as the model generated them
    n_answer: int  # how many continuation tokens belong to the answer sentence
    # A thinking target (attacks/matcha/thinking.py): the answer sentence starts after the trace, and the CoT is the
    # continuation spans --reasoning-source names. None: the answer first, the CoT all the rest (the paper's).
    answer_start: int = 0
    cot_spans: Sequence[tuple[int, int]] | None = None

    def positions(self, prefix_len: int, head_len: int, tail_len: int) -> tuple[int, int]:
        """(n3, n4): absolute end of the answer and end of the CoT (a thinking target's: of the continuation) in
        the clean sequence."""
        n3 = prefix_len + head_len + len(self.question_ids) + tail_len + self.answer_start + self.n_answer
        if self.cot_spans is None:
            return n3, n3 + len(self.continuation_ids) - self.n_answer
        return n3, n3 - self.answer_start - self.n_answer + len(self.continuation_ids)

    def scored_from(self) -> int:
        """The first continuation position the loss reads (0 but for a thinking target whose trace is not
        scored)."""
        if self.cot_spans is None:
            return 0
        return min([self.answer_start, *(start for start, _ in self.cot_spans)])

    def cot_positions(self) -> list[int] | None:
        """The CoT's continuation positions of a thinking target (None: all after the answer)."""
        if self.cot_spans is None:
            return None
        return [p for start, end in self.cot_spans for p in range(start, end)]


class MatchaObjective:
    """L_opt = L_c - lambda * L_a for perturbed versions of one question (see ``loss.py``)."""

    def __init__(
        self,
        backend: WhiteBoxBackend,  # an HFBackend
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
        # Logits are kept for the positions the loss reads only: a thinking target's trace is teacher-forced but,
        # under --reasoning-source chain, never scored, so its thousands of positions need no logits.
        self.scored_from = reference.scored_from()
        self.m = len(reference.continuation_ids) - self.scored_from
        n3, n4 = reference.positions(len(prefix_ids), len(head_ids), len(tail_ids))
        self.n3, self.n4 = n3, n4
        cot = reference.cot_positions()
        # lambda is the CoT's share of the whole sequence (loss.loss_weight), a thinking target's CoT counted apart.
        share = loss_weight(n3, n4) if cot is None else len(cot) / n4
        self.lam = share if lam is None else lam
        self.cot_index = None if cot is None else torch.tensor([p - self.scored_from for p in cot], dtype=torch.long)
        self.answer_norm = n3 if answer_loss == "n3" else None
        with torch.no_grad():
            self.head = backend.embed(torch.tensor(list(head_ids)))
            # The last continuation token is never an input: nothing after it is predicted.
            self.tail = backend.embed(torch.tensor(list(tail_ids) + reference.continuation_ids[:-1]))
        self._reference_logits: torch.Tensor | None = None  # computed on first use, or for many by prepare()

    @property
    def reference_logits(self) -> torch.Tensor:
        """The clean question's continuation logits [m, V] (the scored positions), the loss's target distributions."""
        if self._reference_logits is None:
            prepare([self])
        return cast(torch.Tensor, self._reference_logits)

    # ------------------------------------------------------------------ building blocks
    def embed_question(self, batch_ids: Sequence[Sequence[int]]) -> torch.Tensor:
        return self.backend.embed(torch.tensor([list(ids) for ids in batch_ids]))

    def width(self, question_len: int) -> int:
        """Tokens fed after the prefix for a question of ``question_len`` tokens (:meth:`suffix`'s length)."""
        return len(self.head_ids) + question_len + self.tail.shape[0]

    def suffix(self, question_embeds: torch.Tensor) -> torch.Tensor:
        """The input embeddings after the prefix, [head | question | tail + continuation[:-1]]: [L, H]."""
        return torch.cat([self.head, question_embeds.to(self.head.dtype), self.tail])

    def logits(self, question_embeds: torch.Tensor) -> torch.Tensor:
        """Logits [B, m, V] at the positions that predict the continuation tokens."""
        return _logits([self] * question_embeds.shape[0], list(question_embeds))[0]

    def loss(self, question_embeds: torch.Tensor) -> LossTerms:
        return self.terms(self.logits(question_embeds))

    def terms(self, logits: torch.Tensor) -> LossTerms:
        """L_opt terms [B] of continuation logits [B, m, V]."""
        return matcha_loss(logits, self.reference_logits, self.reference.n_answer, self.lam, self.answer_norm,
                           answer_start=self.reference.answer_start - self.scored_from,
                           cot_index=self._cot_index_on(logits.device))

    def terms_of_sums(self, sums: torch.Tensor, dtype: torch.dtype) -> LossTerms:
        """L_opt terms [B] of the per-position sums [B, m] of continuation logits of ``dtype``
        (:func:`~robusteval.attacks.matcha.loss.position_sums` against :attr:`reference_logits`)."""
        return terms_of_sums(sums, self.reference.n_answer, self.lam, self.answer_norm,
                             answer_start=self.reference.answer_start - self.scored_from,
                             cot_index=self._cot_index_on(sums.device), dtype=dtype)

    def _cot_index_on(self, device: torch.device) -> torch.Tensor | None:
        """:attr:`cot_index` on ``device``, copied there once (each row of every round copied it: a sync on a GPU)."""
        if self.cot_index is not None and self.cot_index.device != device:
            self.cot_index = self.cot_index.to(device)
        return self.cot_index

    # ------------------------------------------------------------------ attack primitives
    def embedding_gradient(self, question_ids: Sequence[int]) -> tuple[torch.Tensor, LossTerms]:
        """d(-L_opt)/d(question embeddings) [Lq, H] and the loss terms at ``question_ids``.

        The one-hot gradient the token attack needs is this times the (scaled) embedding matrix, computed
        only for the rows and tokens it scores, instead of a [Lq, V] one-hot matmul.
        """
        return self.embedding_gradient_of_embeds(self.embed_question([question_ids])[0])

    def embedding_gradient_of_embeds(self, question_embeds: torch.Tensor) -> tuple[torch.Tensor, LossTerms]:
        """d(-L_opt)/d(question embeddings) at arbitrary embeddings [Lq, H] (the embedding attack's step)."""
        return gradients([self], [question_embeds])[0]

    def leading_gradient(self, question_ids: Sequence[int], rows: int) -> torch.Tensor:
        """d(-L_opt)/d(input embeddings) [rows, H] of the first ``rows`` positions of the whole input
        [prefix | head | question | tail + continuation[:-1]] at ``question_ids``: one forward and backward over
        all of it (the prefix fed inline, not from its cache, so its rows get gradients)."""
        with torch.no_grad():
            prefix = self.backend.embed(torch.tensor(self.prefix_ids, dtype=torch.long))
            whole = torch.cat([prefix.to(self.head.dtype), self.suffix(self.embed_question([question_ids])[0])])
        lead = whole[:rows].detach().requires_grad_(True)
        with torch.enable_grad():
            logits = self.backend.forward([], [torch.cat([lead, whole[rows:]])], logits_to_keep=self.m)
            terms = self.terms(logits[:, logits.shape[1] - self.m:])
            (grad,) = torch.autograd.grad(-terms.total[0], lead)
        return grad

    def losses(self, batch_ids: Sequence[Sequence[int]]) -> torch.Tensor:
        """L_opt of many equal-length candidate questions, in chunks that bound logit memory."""
        if not batch_ids:
            return torch.empty(0)
        return scores([self], [batch_ids])[0].total


def _logits(objectives: Sequence[MatchaObjective], question_embeds: Sequence[torch.Tensor]
            ) -> tuple[torch.Tensor, list[int]]:
    """Continuation logits of one row per (objective, question [Lq, H]) in one padded forward per shared prefix:
    ([rows, max m, V], each row's m). Row i's own logits are its last m_i (rows are left-padded)."""
    backend = objectives[0].backend
    ms = [o.m for o in objectives]
    keep = max(ms)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, objective in enumerate(objectives):
        groups.setdefault(tuple(objective.prefix_ids), []).append(i)
    if len(groups) == 1:
        rows = [o.suffix(q) for o, q in zip(objectives, question_embeds, strict=True)]
        return backend.forward(objectives[0].prefix_ids, rows, logits_to_keep=keep), ms
    out: list[torch.Tensor | None] = [None] * len(objectives)
    for prefix, indices in groups.items():
        logits = backend.forward(list(prefix), [objectives[i].suffix(question_embeds[i]) for i in indices],
                                 logits_to_keep=keep)
        for row, i in enumerate(indices):
            out[i] = logits[row]
    return torch.stack([t for t in out if t is not None]), ms


@torch.no_grad()
def prepare(objectives: Sequence[MatchaObjective]) -> None:
    """Compute the reference logits of every objective that lacks them, in as few padded forwards as the logit
    budget allows."""
    todo = [o for o in objectives if o._reference_logits is None]
    if not todo:
        return
    for part in _chunks(todo, range(len(todo)), [len(o.reference.question_ids) for o in todo]):
        chunk = todo[part]
        logits, ms = _logits(chunk, [o.embed_question([o.reference.question_ids])[0] for o in chunk])
        for row, objective in enumerate(chunk):
            # A copy: a view would keep the whole chunk's logits alive as long as the objective.
            objective._reference_logits = logits[row, logits.shape[1] - ms[row]:].clone()


def _chunks(objectives: Sequence[MatchaObjective], rows: Sequence[int], questions: Sequence[int], *,
            gradient: bool = False) -> list[slice]:
    """Consecutive ``rows`` (each an objective's index, with a question of ``questions[i]`` tokens) in chunks
    whose padded logits, rows x (largest m) x vocabulary, fit the backend's logit budget, whose attention mask
    fits its mask budget (``rows_per_forward``: long questions go a few rows, or one, at a time) and whose memory
    (logits, with ``gradient`` their gradient and the activations a backward keeps, and the KV cache: the
    :func:`~robusteval.models.memory_plan.attack_rows` plan) fits the memory there is under ``--max-memory``; one
    row always goes; an objective's ``candidate_chunk`` caps the rows per chunk."""
    from robusteval.models.hf_scoring import logit_budget
    from robusteval.models.memory_plan import ROW_SHARE, attack_shape, memory_budget

    if not rows:
        return []
    backend = objectives[0].backend
    vocab = backend.embedding_matrix.shape[0]  # the LM head's width, near enough for a budget
    budget = logit_budget(backend.device)
    shape = attack_shape(backend)
    memory = memory_budget(backend.device, getattr(backend, "max_memory", None)) if shape is not None else None
    cap = min((o.candidate_chunk for o in objectives if o.candidate_chunk), default=None)
    fits = getattr(backend, "rows_per_forward", None)

    def planned(count: int, m: int, width: int, prefix: int) -> bool:
        return (shape is None or memory is None
                or count * shape.row_bytes(m, prefix, width, gradient=gradient) <= ROW_SHARE * memory)

    out, start, widest, longest = [], 0, 0, 0
    for end, j in enumerate(rows):
        wider = max(widest, objectives[j].m)
        longer = max(longest, objectives[j].width(questions[end]))
        prefix = len(objectives[j].prefix_ids)
        if end > start and ((end - start + 1) * wider * vocab > budget or (cap is not None and end - start >= cap)
                            or (fits is not None and end - start + 1 > fits(prefix, longer))
                            or not planned(end - start + 1, wider, longer, prefix)):
            out.append(slice(start, end))
            start, wider, longer = end, objectives[j].m, objectives[j].width(questions[end])
        widest, longest = wider, longer
    out.append(slice(start, len(rows)))
    return out


def gradients(objectives: Sequence[MatchaObjective], question_embeds: Sequence[torch.Tensor]
              ) -> list[tuple[torch.Tensor, LossTerms]]:
    """For each (objective, question embeddings [Lq_i, H]): d(-L_opt)/d(question embeddings) [Lq_i, H] and the
    loss terms there (on the host, all read in one sync), from padded forwards and backwards over as many rows as
    the logit budget allows (rows do not interact, so the gradient of the summed losses is each row's own)."""
    out: list[tuple[torch.Tensor, LossTerms]] = []
    for part in _chunks(objectives, range(len(objectives)), [q.shape[0] for q in question_embeds], gradient=True):
        chunk = objectives[part]
        leaves = [q.detach().requires_grad_(True) for q in question_embeds[part]]
        with torch.enable_grad():
            logits, ms = _logits(chunk, leaves)
            # One chunked loss over the whole padded batch, each row against its own reference (its last m
            # positions): autograd keeps the logits and a [rows, positions] tensor, no vocabulary-sized copy.
            sums = position_sums(logits, [o.reference_logits for o in chunk])
            keep = sums.shape[1]
            terms = [o.terms_of_sums(sums[b : b + 1, keep - m :], logits.dtype)
                     for b, (o, m) in enumerate(zip(chunk, ms, strict=True))]
            del logits
            grads = torch.autograd.grad(-torch.stack([t.total[0] for t in terms]).sum(), leaves)
        out += [(g, LossTerms(t.total.detach()[0], t.cot.detach()[0], t.answer.detach()[0]))
                for g, t in zip(grads, terms, strict=True)]
    # Every row's terms read on the host at once: the attacks log them (float()), one sync each on a GPU.
    return [(g, t) for (g, _), t in zip(out, host_terms([t for _, t in out]), strict=True)]


#: An objective's candidate questions: embeddings [C, Lq, H], or token ids (C lists of Lq), embedded a chunk at a
#: time (C grows with the question, so all C embedded at once would be quadratic in its length).
Candidates = torch.Tensor | Sequence[Sequence[int]]


def _width(batch: Candidates) -> int:
    return int(batch.shape[1]) if isinstance(batch, torch.Tensor) else len(batch[0])


def _chunk_rows(objectives: Sequence[MatchaObjective], questions: Sequence[Candidates],
                chunk: Sequence[tuple[int, int]]) -> list[torch.Tensor]:
    """The question embeddings [Lq, H] of a chunk's (objective, candidate) rows; the token ids of all of them
    embedded together (one copy to the device: each is a sync on a GPU)."""
    out: list[torch.Tensor | None] = []
    pending: list[tuple[int, list[int]]] = []  # (row, its ids) of the rows given as token ids
    for j, block, stop in _blocks(chunk):
        first, last = chunk[block][1], chunk[stop - 1][1]
        batch = questions[j]
        if isinstance(batch, torch.Tensor):
            out += list(batch[first : last + 1])
            continue
        for ids in batch[first : last + 1]:
            pending.append((len(out), list(ids)))
            out.append(None)
    if pending:
        flat = torch.tensor([t for _, ids in pending for t in ids], dtype=torch.long)
        embedded = objectives[0].backend.embed(flat)  # under scores' no_grad
        start = 0
        for row, ids in pending:
            out[row] = embedded[start : start + len(ids)]
            start += len(ids)
    return [t for t in out if t is not None]


def _blocks(chunk: Sequence[tuple[int, int]]) -> Iterator[tuple[int, int, int]]:
    """(objective j, start, stop) of each run of consecutive rows of one objective in ``chunk``."""
    block = 0
    while block < len(chunk):
        j = chunk[block][0]
        stop = block
        while stop < len(chunk) and chunk[stop][0] == j:
            stop += 1
        yield j, block, stop
        block = stop


@torch.no_grad()
def scores(objectives: Sequence[MatchaObjective], questions: Sequence[Candidates]) -> list[LossTerms]:
    """L_opt terms [C_j] (on the host, all read in one sync) of each objective's equal-length candidate questions
    (:data:`Candidates`), all in padded forwards over every candidate of every objective, chunked by the logit and
    mask budgets (:func:`_chunks`)."""
    rows = [(j, c) for j, batch in enumerate(questions) for c in range(len(batch))]
    totals: list[list[torch.Tensor]] = [[] for _ in objectives]
    cots: list[list[torch.Tensor]] = [[] for _ in objectives]
    answers: list[list[torch.Tensor]] = [[] for _ in objectives]
    for part in _chunks(objectives, [j for j, _ in rows], [_width(questions[j]) for j, _ in rows]):
        chunk = rows[part]
        logits, ms = _logits([objectives[j] for j, _ in chunk], _chunk_rows(objectives, questions, chunk))
        # Consecutive rows of one objective share its reference: position_sums computes them together.
        sums = position_sums(logits, [objectives[j].reference_logits for j, _ in chunk])
        dtype, keep = logits.dtype, logits.shape[1]
        del logits
        for j, block, stop in _blocks(chunk):
            terms = objectives[j].terms_of_sums(sums[block:stop, keep - ms[block]:], dtype)
            totals[j].append(terms.total)
            cots[j].append(terms.cot)
            answers[j].append(terms.answer)
    # On the host, in one copy for every objective: the attacks rank and log them (tolist(), float()).
    return host_terms([LossTerms(torch.cat(t), torch.cat(c), torch.cat(a)) if t else
                       LossTerms(torch.empty(0), torch.empty(0), torch.empty(0))
                       for t, c, a in zip(totals, cots, answers, strict=True)])
