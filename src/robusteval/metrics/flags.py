"""The mark of a flagged number (``⚑``): a rate that is weaker than it looks (MATCHA's, where its reasoning judge is
deterministic only or no semantic gate checked its edits), shown the same way by every surface: a method's table,
``runs show|compare``, the report and the study leaderboard. A method says which of its numbers carry a flag and
why (``MethodResults.flag_texts``); the mark is shared."""

from __future__ import annotations

#: The marker of a flagged number, before it in a table and before each flag's text under it.
FLAG = "⚑"
