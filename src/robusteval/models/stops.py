"""Stop strings: where a decoded text stops, found while decoding without decoding the whole text every step."""

from __future__ import annotations

from collections.abc import Callable, Sequence

#: Characters of the decoded tail beyond the longest stop string and the newest token (see :func:`stopped_text`).
STOP_MARGIN = 8


def first_stop(text: str, stops: Sequence[str]) -> int | None:
    """Where the earliest of ``stops`` starts in ``text``, or None (empty stop strings never match)."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else None


def stopped_text(decode: Callable[[Sequence[int]], str], ids: list[int], stops: Sequence[str]) -> str | None:
    """The text of ``ids`` cut before its first stop string when the newest token completed one, else None.

    Only the tail is decoded at every step (a window of the last tokens long enough to hold the longest stop
    string and the newest token's text, with a margin for the window's own first characters, which may
    differ from the full text's: a dropped prefix space, a split UTF-8 character); the whole text is
    decoded only when the tail shows a stop, and the cut is made on it, exactly as a full decode would.
    """
    need = max(len(s) for s in stops) + len(decode(ids[-1:])) + STOP_MARGIN
    window = 8
    tail = decode(ids[-window:])
    while len(tail) < need and window < len(ids):
        window *= 2
        tail = decode(ids[-window:])
    if first_stop(tail, stops) is None:
        return None
    text = decode(ids)
    cut = first_stop(text, stops)
    return None if cut is None else text[:cut]
