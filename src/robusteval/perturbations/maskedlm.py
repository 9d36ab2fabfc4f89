"""W-maskedlm: replacements a fill-mask model proposes for a word in its context (BERT-Attack/BAE style).

How a word is filled
--------------------
The text is tokenised once (fast tokenizer, offsets); the tokens of the word are replaced by as many mask
tokens (one per character for a Chinese character-level BERT). A word whose span cuts through a token gets
no candidates. The masks are then filled by a **left-to-right beam search**: each step predicts the
leftmost open mask given the tokens already chosen, and keeps the ``beam_width`` best partial words by
summed log-probability. One step is one batched forward pass over every beam of every word being filled
(``perturb`` fills the words it may use together).

What a mask may become
----------------------
Each position may only take tokens of the same *kind* as the token it masks (word-initial ``Ġ``/``▁``,
WordPiece continuation ``##``, or plain), so the filled tokens join into one word exactly as the
original's did, and only tokens made of letters of the language (ideographs for Chinese, ASCII letters for
English); special tokens never. Finished beams are decoded and kept when they form one whole word (CJK
only, or ``[A-Za-z]+``) that is not the original, a case variant or an inflection of it. English
replacements take the original's casing (uncased models predict lowercase) and are at least
``min(3, len(word))`` letters long.

Similarity gate
---------------
With ``min_similarity`` (``gate``), a substitution that leaves the sentence less similar to the original than
the minimum is refused and the word's next candidate tried
(:func:`robusteval.perturbations.similarity.gated_perturb`).

Optional re-ranking
-------------------
``rerank_model`` (an hf causal LM, loaded with :func:`robusteval.models.load_backend`) re-orders the
fill-mask model's best ``2 * max_candidates`` candidates by the log-likelihood of the whole sentence with
the candidate substituted: the left context is the prompt, ``candidate + right context`` the scored
continuation (the same prompt for every candidate, so this orders by full-sentence likelihood). A word at
the very start is scored after a newline.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from robusteval.errors import UserError
from robusteval.perturbations.base import (
    ChangeBudget,
    Language,
    Level,
    Perturbation,
    Perturbed,
    Protection,
    Span,
    SpanPerturbation,
    is_cjk,
)
from robusteval.perturbations.embedding import WORD_BUDGET, is_plausible_replacement, match_case
from robusteval.perturbations.registry import MethodOptions, register_perturbation
from robusteval.perturbations.segment import is_word

METHOD = "W-maskedlm"
_EN_LETTERS = re.compile(r"[A-Za-z]+")
_MARKERS = ("Ġ", "▁")
_KINDS = ("plain", "marked", "continuation")
_NO_EXTRA_PROTECTION = Protection()  # the base's default: digits and placeholders
_LOGIT_BUDGET = 1 << 26  # floats of logits per forward pass (256 MB)


def token_kind(token: str) -> str:
    """Where a raw token may stand in a word: ``marked`` starts one, ``continuation`` extends one."""
    if token.startswith("##"):
        return "continuation"
    if token.startswith(_MARKERS):
        return "marked"
    return "plain"


def letters_only(text: str, language: Language) -> bool:
    """Ideographs only (Chinese) or ASCII letters only (English); never empty."""
    if language == "zh":
        return bool(text) and all(is_cjk(char) for char in text)
    return bool(_EN_LETTERS.fullmatch(text))


@dataclass
class _Job:
    """One word to fill: the masked ids, the mask positions and, per position, which tokens may go there."""

    ids: list[int]
    positions: list[int]
    kinds: list[str]
    beams: list[tuple[list[int], float]] = field(default_factory=lambda: [([], 0.0)])

    @property
    def step(self) -> int:
        return len(self.beams[0][0]) if self.beams else 0

    @property
    def done(self) -> bool:
        """Every mask filled, or no allowed token for one of them (then no beams are left)."""
        return not self.beams or self.step >= len(self.positions)


@dataclass
class _Model:
    """A loaded fill-mask model with the per-kind masks of allowed tokens."""

    tokenizer: Any
    model: Any
    device: Any
    mask_id: int
    pad_id: int
    max_length: int
    allowed: dict[str, Any]  # kind -> bool tensor [vocab] on device


@dataclass
class MaskedLMPerturbation(SpanPerturbation):
    """Fill-mask candidates for a word in context; the model (and re-ranker) load once, on first use.

    ``beam_width`` 0 means ``max(16, 3 * max_candidates)``. Results are cached per (text, span).
    """

    name: ClassVar[str] = METHOD
    level: ClassVar[Level] = "word"
    default_budget: ClassVar[ChangeBudget] = WORD_BUDGET
    mlm_model: str = ""
    rerank_model: str | None = None
    device: str = "cpu"
    beam_width: int = 0
    batch_size: int = 32
    _model: _Model | None = field(default=None, init=False, repr=False)
    _reranker: Any = field(default=None, init=False, repr=False)
    _cache: dict[tuple[str, int, int], list[str]] = field(default_factory=dict, init=False, repr=False)

    # ------------------------------------------------------------------ loading
    @property
    def width(self) -> int:
        return self.beam_width if self.beam_width > 0 else max(16, 3 * self.max_candidates)

    def load(self) -> _Model:
        """Tokenizer + AutoModelForMaskedLM from ``mlm_model`` (a local folder or a hub id), once."""
        if self._model is not None:
            return self._model
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        from robusteval.models.hf import resolve_device

        target = self.mlm_model[3:] if self.mlm_model.startswith("hf:") else self.mlm_model
        if not target:
            raise UserError(f"{METHOD} needs a fill-mask model: set the mlm_model option (a folder or hub id)")
        path = Path(target).expanduser()
        if target.startswith((".", "/", "~")) and not path.exists():
            raise UserError(f"{METHOD}: the mlm_model option names {target}, which does not exist")
        source = str(path) if path.exists() else target  # else a hub id: the ordinary download path for users
        try:
            tokenizer = AutoTokenizer.from_pretrained(source)
            if tokenizer.mask_token_id is None:
                raise UserError(f"{METHOD}: mlm_model {target} has no mask token, so it is not a fill-mask model")
            if not getattr(tokenizer, "is_fast", False):
                raise UserError(f"{METHOD}: mlm_model {target} needs a fast tokenizer (character offsets)")
            model = AutoModelForMaskedLM.from_pretrained(source, dtype=torch.float32)
        except (OSError, ValueError) as exc:
            raise UserError(f"{METHOD}: cannot load mlm_model {target} as a fill-mask model "
                            f"({str(exc).splitlines()[0]})") from None
        device = resolve_device(self.device)
        model = model.eval().requires_grad_(False).to(device)
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        limits = [getattr(tokenizer, "model_max_length", None) or 0,
                  (getattr(model.config, "max_position_embeddings", None) or 512) - 2]
        max_length = min(limit for limit in limits if 0 < limit < 1_000_000)
        self._model = _Model(tokenizer, model, device, int(tokenizer.mask_token_id), int(pad_id), max_length,
                             self._allowed_tokens(tokenizer, model, device))
        return self._model

    def _allowed_tokens(self, tokenizer: Any, model: Any, device: Any) -> dict[str, Any]:
        """Per token kind, the vocabulary ids that are letters of the language (never special tokens)."""
        import torch

        head = model.get_output_embeddings()
        size = int(head.weight.shape[0]) if head is not None else int(model.config.vocab_size)
        ids = list(range(min(size, len(tokenizer))))
        raw = tokenizer.convert_ids_to_tokens(ids)
        decoded = tokenizer.backend_tokenizer.decode_batch([[i] for i in ids], skip_special_tokens=True)
        special = set(tokenizer.all_special_ids)
        allowed = {kind: torch.zeros(size, dtype=torch.bool) for kind in _KINDS}
        for i, (token, text) in enumerate(zip(raw, decoded, strict=True)):
            if i in special or not isinstance(token, str):
                continue
            kind = token_kind(token)
            piece = text.strip()
            if kind == "continuation":
                piece = piece.removeprefix("##")
            if letters_only(piece, self.language):
                allowed[kind][i] = True
        return {kind: mask.to(device) for kind, mask in allowed.items()}

    def reranker(self) -> Any:
        """The causal LM that orders candidates by sentence likelihood (None when not configured)."""
        if self.rerank_model and self._reranker is None:
            from robusteval.models import LOGPROBS, load_backend, require

            spec = self.rerank_model if self.rerank_model.startswith(("hf:", "openai:")) else f"hf:{self.rerank_model}"
            backend = load_backend(spec, device=self.device)
            require(backend, LOGPROBS, f"{METHOD} re-ranking (rerank_model)")
            self._reranker = backend
        return self._reranker

    # ------------------------------------------------------------------ masking
    def masked_input(self, text: str, span: Span) -> tuple[list[int], list[int], list[str]] | None:
        """(ids with the word's tokens masked, mask positions, kinds of the masked tokens), or None when the
        word is not a whole number of tokens. Long texts keep a window of ``max_length`` tokens around it."""
        loaded = self.load()
        encoded = loaded.tokenizer(text, return_offsets_mapping=True, add_special_tokens=True)
        ids = list(encoded["input_ids"])
        offsets = [tuple(pair) for pair in encoded["offset_mapping"]]
        special = set(loaded.tokenizer.all_special_ids)
        inside: list[int] = []
        for i, (start, end) in enumerate(offsets):
            if end <= start or ids[i] in special:
                continue
            if start < span.end and end > span.start:  # overlaps the word
                if start < span.start or end > span.end:
                    return None  # the word cuts through this token
                inside.append(i)
        if not inside or inside != list(range(inside[0], inside[-1] + 1)):
            return None
        raw = loaded.tokenizer.convert_ids_to_tokens([ids[i] for i in inside])
        kinds = [token_kind(token) for token in raw]
        for i in inside:
            ids[i] = loaded.mask_id
        if len(ids) > loaded.max_length:
            ids, inside = _window(ids, inside, loaded.max_length, special)
        return ids, inside, kinds

    # ------------------------------------------------------------------ filling
    def candidates_many(self, text: str, spans: list[Span]) -> list[list[str]]:
        """Candidates for several words of one text, filled together (one batched pass per beam step)."""
        todo = [span for span in dict.fromkeys(spans) if (text, span.start, span.end) not in self._cache]
        jobs: list[tuple[Span, _Job]] = []
        for span in todo:
            masked = self.masked_input(text, span)
            if masked is None:
                self._cache[(text, span.start, span.end)] = []
            else:
                jobs.append((span, _Job(*masked)))
        if jobs:
            self._beam_search([job for _, job in jobs])
        for span, job in jobs:
            words = self._words(job, span)
            self._cache[(text, span.start, span.end)] = self._rerank(text, span, words)
        return [list(self._cache[(text, span.start, span.end)]) for span in spans]

    def _beam_search(self, jobs: list[_Job]) -> None:
        """Fill every job's masks left to right, keeping ``width`` beams per job."""
        width = self.width
        while True:
            active = [job for job in jobs if not job.done]
            if not active:
                return
            rows: list[list[int]] = []
            targets: list[int] = []
            owners: list[tuple[_Job, int]] = []
            for job in active:
                for b, (filled, _) in enumerate(job.beams):
                    ids = list(job.ids)
                    for position, token in zip(job.positions, filled, strict=False):
                        ids[position] = token
                    rows.append(ids)
                    targets.append(job.positions[job.step])
                    owners.append((job, b))
            scores, tokens = self._top_tokens(rows, targets, [job.kinds[job.step] for job, _ in owners], width)
            expansions: dict[int, list[tuple[float, int, int, int]]] = {}
            for r, (job, b) in enumerate(owners):
                base = job.beams[b][1]
                for rank in range(tokens.shape[1]):
                    score = float(scores[r, rank])
                    if score == float("-inf"):
                        break
                    expansions.setdefault(id(job), []).append((base + score, b, rank, int(tokens[r, rank])))
            for job in active:
                options = sorted(expansions.get(id(job), []), key=lambda e: (-e[0], e[1], e[2]))[:width]
                job.beams = [([*job.beams[b][0], token], score) for score, b, _, token in options]

    def _top_tokens(self, rows: list[list[int]], targets: list[int], kinds: list[str], k: int) -> tuple[Any, Any]:
        """Top-``k`` allowed (log-prob, token) at ``targets[r]`` of each row, at most ``batch_size`` rows a pass."""
        import torch

        loaded = self.load()
        # The model returns logits for every position: keep rows x length x vocab within _LOGIT_BUDGET floats.
        vocab = int(next(iter(loaded.allowed.values())).shape[0])
        longest = max(len(row) for row in rows)
        per_chunk = max(1, min(self.batch_size, _LOGIT_BUDGET // (longest * vocab)))
        all_scores, all_tokens = [], []
        with torch.inference_mode():
            for start in range(0, len(rows), per_chunk):
                chunk = rows[start : start + per_chunk]
                width = max(len(row) for row in chunk)
                ids = torch.full((len(chunk), width), loaded.pad_id, dtype=torch.long)
                attention = torch.zeros((len(chunk), width), dtype=torch.long)
                for r, row in enumerate(chunk):
                    ids[r, : len(row)] = torch.tensor(row)
                    attention[r, : len(row)] = 1
                logits = loaded.model(input_ids=ids.to(loaded.device), attention_mask=attention.to(loaded.device)).logits
                rows_index = torch.arange(len(chunk), device=loaded.device)
                picked = logits[rows_index, torch.tensor(targets[start : start + len(chunk)], device=loaded.device)]
                logp = torch.log_softmax(picked.float(), dim=-1)
                allowed = torch.stack([loaded.allowed[kind] for kind in kinds[start : start + len(chunk)]])
                logp = logp.masked_fill(~allowed, float("-inf"))
                values, indices = logp.topk(min(k, logp.shape[-1]), dim=-1)
                all_scores.append(values.cpu())
                all_tokens.append(indices.cpu())
        return torch.cat(all_scores), torch.cat(all_tokens)

    def _words(self, job: _Job, span: Span) -> list[str]:
        """Finished beams as whole words, best first, without the original or its trivial variants."""
        loaded = self.load()
        out: list[str] = []
        for filled, _ in job.beams:
            text = loaded.tokenizer.decode(filled, skip_special_tokens=True).strip()
            if self.language == "zh":
                text = "".join(text.split())  # a character-level BERT decodes "天 气"
            if not letters_only(text, self.language) or not is_plausible_replacement(span.text, text, self.language):
                continue
            word = match_case(span.text, text) if self.language == "en" else text
            if word != span.text and word not in out:
                out.append(word)
        return out

    def _rerank(self, text: str, span: Span, words: list[str]) -> list[str]:
        backend = self.reranker()
        if backend is None or len(words) < 2:
            return words
        words = words[: 2 * self.max_candidates]  # one causal-LM pass per word: re-rank only the plausible
        left = text[: span.start]
        prompt = left.rstrip()
        gap = left[len(prompt) :]
        if not prompt:
            prompt = "\n"
        scores = backend.continuation_logprobs(prompt, [gap + word + text[span.end :] for word in words])
        order = sorted(range(len(words)), key=lambda i: (-scores[i], i))
        return [words[i] for i in order]

    # ------------------------------------------------------------------ the interface
    def units(self, text: str) -> list[Span]:
        return [span for span in super().units(text) if is_word(span)]

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> list[str]:
        return self.candidates_many(text, [span])[0]

    def perturb(
        self,
        text: str,
        *,
        budget: ChangeBudget | None = None,
        rng: random.Random,
        protect: Protection = _NO_EXTRA_PROTECTION,
    ) -> Perturbed:
        """As :meth:`SpanPerturbation.perturb`, after filling the words it will try in one batched search.

        The base shuffles the eligible words with ``rng``; a copy of ``rng`` replays that shuffle here, so
        the words tried first (twice the number to change, as some have no candidates) are filled together
        and ``rng`` itself is consumed exactly as the base consumes it.
        """
        budget = budget or self.default_budget
        protected = protect.mask(text)
        eligible = [span for span in self.units(text) if not any(protected[span.start : span.end])]
        replay = random.Random()
        replay.setstate(rng.getstate())
        replay.shuffle(eligible)
        wanted = budget.count(len(eligible))
        if wanted:
            self.candidates_many(text, eligible[: 2 * wanted])
        return super().perturb(text, budget=budget, rng=rng, protect=protect)


def _window(ids: list[int], positions: list[int], limit: int, special: set[int]) -> tuple[list[int], list[int]]:
    """At most ``limit`` ids centred on ``positions``, keeping a leading/trailing special token (CLS/SEP)."""
    head = [ids[0]] if ids[0] in special else []
    tail = [ids[-1]] if ids[-1] in special else []
    body_start, body_end = len(head), len(ids) - len(tail)
    room = max(limit - len(head) - len(tail), positions[-1] - positions[0] + 1)
    centre = (positions[0] + positions[-1]) // 2
    start = max(body_start, min(centre - room // 2, body_end - room))
    end = min(body_end, start + room)
    return head + ids[start:end] + tail, [p - start + len(head) for p in positions]


class ZhMaskedLM(MaskedLMPerturbation):
    language: ClassVar[Language] = "zh"


class EnMaskedLM(MaskedLMPerturbation):
    language: ClassVar[Language] = "en"


def _build(cls: type[MaskedLMPerturbation], options: MethodOptions) -> Perturbation:
    if not options.mlm_model:
        raise UserError(f"{METHOD} needs a fill-mask model: set the mlm_model option (a local folder or hub id, "
                        "e.g. bert-base-chinese or bert-base-uncased)")
    return cls(
        max_candidates=options.max_candidates,
        mlm_model=options.mlm_model,
        rerank_model=options.rerank_model,
        device=options.device,
        beam_width=int(options.extra.get("beam_width", 0)),
    )


@register_perturbation(METHOD, language="zh", level="word", extra="zh",
                       summary="a fill-mask model's replacements in context (optionally re-ranked by a causal LM)")
def build_zh(options: MethodOptions) -> Perturbation:
    return _build(ZhMaskedLM, options)


@register_perturbation(METHOD, language="en", level="word", extra="",
                       summary="a fill-mask model's replacements in context (optionally re-ranked by a causal LM)")
def build_en(options: MethodOptions) -> Perturbation:
    return _build(EnMaskedLM, options)
