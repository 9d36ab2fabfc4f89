"""Log-prob scoring of the ``hf:`` backend: continuations after a prompt, many requests in few forwards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from robusteval.errors import UserError
from robusteval.models.base import Message, ScoreRequest
from robusteval.models.hf_forward import HFForwards
from robusteval.models.hf_prompts import HFPromptLayout
from robusteval.models.memory_plan import ROW_SHARE, attack_shape, memory_budget


@dataclass
class _ScoreRow:
    """One (request, continuation) pair to score: the request's prompt ids (after its prefix) and the
    continuation's own ids."""

    request: int
    column: int
    prompt: list[int]
    ids: list[int]


def logit_budget(device: torch.device | str) -> int:
    """Floats of logits one forward may keep (rows x positions x vocabulary) before callers split a batch.

    A GPU's memory holds a few GiB of logits at no cost and wants large batches; on a CPU every pass over a
    large logits tensor is memory traffic, so batches of long rows over a large vocabulary are cut sooner (a
    [8, 256, 128k] float tensor is 1 GiB: attacking 8 examples at once was slower per example than one at a
    time on a CPU)."""
    return 1 << 29 if torch.device(device).type == "cuda" else 1 << 26  # 2 GiB / 256 MiB of float32


class HFScoring(HFPromptLayout, HFForwards):
    """Summed log-probs of continuations, (request, continuation) rows batched by their cached prefix."""

    def continuation_logprobs(self, prompt: str, continuations: Sequence[str], prefix: str = "", *,
                              messages: Sequence[Message] = ()) -> list[float]:
        """Summed log-probs of each continuation after ``prefix + prompt`` (or after the conversation
        ``messages``, rendered with its generation prompt): the one-request case of
        :meth:`continuation_logprobs_many`."""
        request = ScoreRequest(prompt, tuple(continuations), prefix, tuple(messages))
        return self.continuation_logprobs_many([request])[0]

    @torch.no_grad()
    def continuation_logprobs_many(self, requests: Sequence[ScoreRequest]) -> list[list[float]]:
        """:meth:`continuation_logprobs` of every request, in order, all (request, continuation) rows scored
        together: grouped by their cached prefix ids, then in forwards of at most ``batch_size`` rows whose kept
        logits fit :func:`logit_budget`.

        A row is the prompt's ids followed by the continuation's (encoded on its own); rows of different lengths
        are left-padded after the prefix (:meth:`~robusteval.models.hf_forward.HFForwards._padded`), so each row's continuation ends in the last column and
        only the last ``longest continuation + 1`` positions go through the LM head.
        """
        scores = [[0.0] * len(request.continuations) for request in requests]
        groups: dict[tuple[int, ...], list[_ScoreRow]] = {}
        for index, request in enumerate(requests):
            prefix_ids, prompt_ids = (self.chat_ids(request.messages) if request.messages
                                      else self.prompt_ids(request.prefix, request.prompt))
            # Logit at position t predicts token t+1; the first continuation token is predicted by the last prompt
            # token, so the prompt must not be empty.
            if not prompt_ids:
                raise UserError("continuation_logprobs needs a non-empty prompt")
            for column, continuation in enumerate(request.continuations):
                ids = self.encode(continuation)
                if ids:  # an empty continuation scores 0
                    groups.setdefault(tuple(prefix_ids), []).append(_ScoreRow(index, column, prompt_ids, ids))
        vocab = int(self.embedding_matrix.shape[0])
        for prefix, rows in groups.items():
            for chunk in self._score_chunks(rows, vocab, len(prefix)):
                for row, score in zip(chunk, self._score_rows(list(prefix), chunk), strict=True):
                    scores[row.request][row.column] = score
        return scores

    def _score_chunks(self, rows: list[_ScoreRow], vocab: int, prefix_len: int = 0) -> list[list[_ScoreRow]]:
        """``rows`` in forwards of at most ``batch_size`` rows whose kept logits (rows x (longest continuation + 1)
        x vocab) fit :func:`logit_budget`, whose logits and KV caches fit the memory plan
        (:mod:`~robusteval.models.memory_plan`, under ``--max-memory``) and whose attention mask fits :attr:`mask_budget` (one row always goes);
        rows of like length together, so little is
        padding. Sliding-window models that cannot batch exactly across lengths get rows of one length only."""
        rows = sorted(rows, key=lambda r: (len(r.prompt) + len(r.ids), len(r.ids)))
        buckets: dict[int, list[_ScoreRow]] = {}
        for row in rows:
            buckets.setdefault(len(row.prompt) + len(row.ids) if self.exact_batching_only else 0, []).append(row)
        chunks: list[list[_ScoreRow]] = []
        budget = logit_budget(self.device)
        # The memory plan: each row's logits and KV cache within the memory there is (and --max-memory).
        shape = attack_shape(self)
        memory = memory_budget(self.device, self.max_memory) if shape is not None else None

        def planned(count: int, keep: int, width: int) -> bool:
            return (shape is None or memory is None
                    or count * shape.row_bytes(keep, prefix_len, width, gradient=False) <= ROW_SHARE * memory)
        for bucket in buckets.values():
            chunk: list[_ScoreRow] = []
            keep = 0
            widest = 0
            for row in bucket:
                wider = max(keep, len(row.ids) + 1)
                width = max(widest, len(row.prompt) + len(row.ids))
                if chunk and (len(chunk) >= self.batch_size or (len(chunk) + 1) * wider * vocab > budget
                              or len(chunk) + 1 > self.rows_per_forward(prefix_len, width)
                              or not planned(len(chunk) + 1, wider, width)):
                    chunks.append(chunk)
                    chunk, wider, width = [], len(row.ids) + 1, len(row.prompt) + len(row.ids)
                chunk.append(row)
                keep, widest = wider, width
            if chunk:
                chunks.append(chunk)
        return chunks

    def _score_rows(self, prefix_ids: list[int], rows: Sequence[_ScoreRow]) -> list[float]:
        """Summed log-probs of each row's continuation after its prompt, in one forward after ``prefix_ids``."""
        full = [row.prompt + row.ids for row in rows]
        embeds = self.embed(torch.tensor([i for ids in full for i in ids], device=self.device))
        keep = max(len(row.ids) for row in rows) + 1  # the last position predicts past the end
        logits = self.forward(prefix_ids, list(embeds.split([len(ids) for ids in full])), logits_to_keep=keep)
        out = []
        for b, row in enumerate(rows):
            # Row b's continuation fills its last len(ids) columns; they are predicted by the column before each.
            predicting = logits[b, keep - 1 - len(row.ids) : keep - 1].float()
            target = torch.tensor(row.ids, device=predicting.device)
            out.append(float(torch.log_softmax(predicting, dim=-1).gather(1, target[:, None]).sum()))
        return out
