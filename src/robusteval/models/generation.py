"""How a method asks a model to generate: one typed block, :class:`GenerationOptions`, nested as ``generation`` in
every method's run config (``eval``, ``attack matcha``, ``variants eval``, ``transfer``, the classification
methods).

A method declares which of the block's settings it reads and its own defaults with :func:`generation_block`; the
block is declared and validated once, here. Its keys stay flat on the command line (``--max-new-tokens``), in
``--config`` files (``max_new_tokens = 64``, or ``[generation]`` ``max_new_tokens = 64``), in study files and in
the run identity (``max_new_tokens`` at the top level, as before the block existed: the same values give the same
identity). :class:`GenerationFields` forwards ``config.chat`` and friends to the block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robusteval.config import ConfigError, check_at_least, check_chat, filled, option, shared_block, validated

#: Every setting of the block, in declaration order.
GENERATION_KEYS = ("chat", "system_prompt", "max_new_tokens", "temperature", "top_p")


@validated
@dataclass(frozen=True)
class GenerationOptions:
    """How the model under test generates: prompt shape (chat, system prompt), budget and sampling. Unset (None):
    the method's default (the config reference lists it per method)."""

    chat: bool = option(False, help="prompt through the model's chat template (hf) or /chat/completions (openai): "
                        "a system prompt, any exemplars as earlier turns, the question as the last user turn")
    system_prompt: str | None = option(None, help="--chat: the system prompt (default: the method's: asks for the "
                                       "answer first, then the reasoning, where the method reads answers first; "
                                       "'' for no system turn)")
    max_new_tokens: int | None = option(None, metavar="N", help="generation budget per answer (a thinking target's "
                                        "reply; its trace gets --max-thinking-tokens on top)")
    temperature: float | None = option(None, help="sampling temperature (0: greedy; unset: the method's default, "
                                       "variants eval: 0 for one sample per instance, 0.6 for several)")
    top_p: float | None = option(None, help="nucleus sampling (1: off; unset: the method's default, variants eval: "
                                 "1.0 for one sample per instance, 0.95 for several)")

    def __post_init__(self) -> None:
        check_chat(self)
        check_at_least(self, "max_new_tokens", 1)
        check_at_least(self, "temperature", 0)
        if self.top_p is not None and (isinstance(self.top_p, bool) or not isinstance(self.top_p, int | float)
                                       or not 0 < self.top_p <= 1):
            raise ConfigError(self, "top_p", f"must be within (0, 1], got {self.top_p!r}")

    def budget(self) -> int:
        """``max_new_tokens`` of a method whose default fills it (``generation_block(max_new_tokens=...)``)."""
        return int(filled(self, "max_new_tokens"))

    def sampling_temperature(self) -> float:
        """``temperature`` of a method whose default fills it (``generation_block(temperature=...)``)."""
        return float(filled(self, "temperature"))



def generation_block(*keys: str, **defaults: Any) -> Any:
    """The ``generation`` field of a method's config: the block's settings the method reads (``keys``; any other
    set is refused, and only these are flags, config keys and identity fields of the method) and the method's
    defaults of those left unset (``max_new_tokens=256``). Flat keywords (``EvalConfig(chat=True)``) still build
    it, for one release (:func:`robusteval.config.check_call`)."""
    return shared_block(GenerationOptions, GENERATION_KEYS, keys, defaults)


class GenerationFields:
    """Read access to a config's ``generation`` block under the flat names (``config.chat``), kept for code and
    notebooks written before the block existed."""

    generation: GenerationOptions

    @property
    def chat(self) -> bool:
        return self.generation.chat

    @property
    def system_prompt(self) -> str | None:
        return self.generation.system_prompt

    @property
    def max_new_tokens(self) -> int | None:
        return self.generation.max_new_tokens

    @property
    def temperature(self) -> float | None:
        return self.generation.temperature

    @property
    def top_p(self) -> float | None:
        return self.generation.top_p
