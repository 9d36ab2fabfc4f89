"""The QWERTY keyboard shared by both typo families: English ``C-keyboard``/``C-insert``
(:mod:`.en_char`) and the Chinese pinyin-IME ``C-keyboard`` (:mod:`.zh_char`).

:data:`QWERTY_NEIGHBOURS` is the one adjacency table: for each lower-case letter, the keys that touch it (same
row and the rows above and below). Its symmetry and key geometry are checked by the perturbation tests. Both
families use the same neighbours but walk them in a different order, and the order decides their candidates
(the pinyin typos are listed in table order; the English edits are drawn from rng-shuffled tuples), so:

* :data:`QWERTY_NEIGHBOURS` keeps the order the pinyin typos have always been tried in (mostly the same row
  first, then the rows above and below);
* :data:`QWERTY_NEIGHBOURS_BY_POSITION` derives the English order from it: the same keys sorted by position,
  top row first, left to right.
"""

from __future__ import annotations

__all__ = ["KEY_POSITIONS", "QWERTY_NEIGHBOURS", "QWERTY_NEIGHBOURS_BY_POSITION", "QWERTY_ROWS"]

#: The letter rows of a QWERTY keyboard, top to bottom.
QWERTY_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
# Horizontal offset of each row in key widths (standard staggered layout).
_ROW_SHIFT = (0.0, 0.25, 0.75)

#: Lower-case letter -> (row, horizontal position in key widths) of its key.
KEY_POSITIONS: dict[str, tuple[int, float]] = {
    c: (r, i + _ROW_SHIFT[r]) for r, row in enumerate(QWERTY_ROWS) for i, c in enumerate(row)
}

#: Keys that touch each key on a QWERTY keyboard (same row and the rows above and below).
QWERTY_NEIGHBOURS: dict[str, str] = {
    "q": "wa", "w": "qeas", "e": "wrsd", "r": "etdf", "t": "ryfg", "y": "tugh", "u": "yihj",
    "i": "uojk", "o": "ipkl", "p": "ol",
    "a": "qwsz", "s": "adwezx", "d": "sferxc", "f": "dgrtcv", "g": "fhtyvb", "h": "gjyubn",
    "j": "hkuinm", "k": "jliom", "l": "kop",
    "z": "asx", "x": "zcsd", "c": "xvdf", "v": "cbfg", "b": "vngh", "n": "bmhj", "m": "njk",
}  # fmt: skip

#: :data:`QWERTY_NEIGHBOURS` with each letter's neighbours sorted by key position (top row first, left to
#: right), e.g. ``"g" -> "tyfhvb"``.
QWERTY_NEIGHBOURS_BY_POSITION: dict[str, str] = {
    c: "".join(sorted(near, key=KEY_POSITIONS.__getitem__)) for c, near in QWERTY_NEIGHBOURS.items()
}
