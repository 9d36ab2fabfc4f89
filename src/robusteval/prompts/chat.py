"""Chat conversations as plain data (OpenAI-style turns), shared by every prompt builder. No torch, no tokenizer:
backends render a conversation (the hf backend with the model's chat template, APIs on their side).

``--system-prompt`` semantics, the same for every command: unset (None) = the prompt builder's default system
turn (some builders have none); an empty string = no system turn at all (for templates that refuse one).
"""

from __future__ import annotations

from collections.abc import Iterable

from robusteval.errors import UserError
from robusteval.models.base import Message


def turn(role: str, content: str) -> Message:
    return {"role": role, "content": content}


def conversation(user: str, *, system: str | None = None, history: Iterable[tuple[str, str]] = ()) -> list[Message]:
    """[system] + (user, assistant) pairs of ``history`` + the final user turn; an empty ``system`` is left out."""
    messages = [turn("system", system)] if system else []
    for question, answer in history:
        messages += [turn("user", question), turn("assistant", answer)]
    messages.append(turn("user", user))
    return messages


def resolve_system_prompt(system_prompt: str | None, default: str | None) -> str | None:
    """The system turn's text: the given one, the builder's default when unset, none for ''."""
    if system_prompt is None:
        return default
    return system_prompt or None


def check_chat_options(chat: bool, system_prompt: str | None) -> None:
    """A system prompt only exists in a chat; refuse it without --chat rather than silently ignoring it."""
    if system_prompt is not None and not chat:
        raise UserError("a system prompt needs chat on (a system prompt is a turn of the chat conversation)")
