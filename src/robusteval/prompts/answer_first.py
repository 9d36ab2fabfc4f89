"""Answer-first in-context prompts: ``Q: <question>\\nA: The answer is <y>. <rationale>``.

The prompt is kept as segments (shared exemplar prefix | ``Q: `` | question | ``\\nA:``) rather than one
string, so backends can cache the prefix and attacks know exactly which tokens belong to the question.

Under MATCHA's ``--count authors`` the exemplars are written as the authors' code writes them
(``style="authors"``, :func:`exemplar_block`): ``Q: <question>\nA: The answer is <y> <rationale>.``, the answer
as given with no period after it, and a period added after the rationale (a doubled one when it ends in one).

For instruction-tuned models the same prompt exists as a chat conversation (:meth:`AnswerFirstPrompt.messages`):
a system prompt asking for the answer first, each exemplar as a user turn (the question) and an assistant turn
(``The answer is y. rationale``), then the question as the final user turn. The backend renders it with the
model's chat template and caches the exemplar turns like the text prefix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from robusteval.config import did_you_mean
from robusteval.errors import DataError
from robusteval.models.base import GenerationRequest
from robusteval.prompts.chat import Message, conversation, resolve_system_prompt

QUESTION_HEAD = "Q: "
ANSWER_HEAD = "\nA:"
EXEMPLAR_SEPARATOR = "\n\n"
# Generation stops where the model starts inventing the next question.
STOP_STRINGS = ("\nQ:", "\n\nQ")
BUILTIN_EXEMPLARS = {"number": "math", "math": "math", "yesno": "yesno"}
#: The system turn of answer-first chats (``--chat`` without ``--system-prompt``): instruction-tuned models
#: otherwise reason first and answer last, and the answer is read from "The answer is X".
DEFAULT_SYSTEM_PROMPT = (
    "Answer the question. Start your reply with \"The answer is X.\", where X is only the final answer (a "
    "number, an expression, or yes or no), then explain the reasoning that leads to it step by step."
)


@dataclass(frozen=True)
class Exemplar:
    question: str
    answer: str
    rationale: str


@dataclass(frozen=True)
class ExemplarSet:
    name: str
    answer_type: str
    exemplars: tuple[Exemplar, ...]


def _strip_wei_question(text: str) -> str:
    # Wei et al. files store "Q: <question>\nA:"; keep only the question.
    text = text.strip()
    if text.startswith("Q:"):
        text = text[2:]
    if text.endswith("A:"):
        text = text[:-2]
    return text.strip()


def parse_exemplars(data: object, source: str) -> ExemplarSet:
    """Read this project's exemplar format, or the Wei et al. 2022 ``{"prompt": [...]}`` format."""
    if isinstance(data, dict) and isinstance(data.get("exemplars"), list):
        items, name, answer_type = data["exemplars"], str(data.get("name", source)), str(data.get("answer_type", ""))
        keys = ("question", "answer", "rationale")
    elif isinstance(data, dict) and isinstance(data.get("prompt"), list):
        items, name, answer_type = data["prompt"], Path(source).stem, ""
        keys = ("question", "pred_ans", "rationale")
    else:
        raise DataError(source, "expected an object with an 'exemplars' list (or a Wei et al. 'prompt' list)")
    exemplars = []
    for index, item in enumerate(items):
        for key in keys:
            if not isinstance(item, dict) or not isinstance(item.get(key), str) or not item[key].strip():
                raise DataError(source, f"exemplar {index}: missing or empty text", field=key)
        question = _strip_wei_question(item[keys[0]])
        exemplars.append(Exemplar(question, item[keys[1]].strip(), item[keys[2]].strip()))
    if not exemplars:
        raise DataError(source, "no exemplars")
    if not answer_type:
        answers = {e.answer.lower() for e in exemplars}
        answer_type = "yesno" if answers <= {"yes", "no"} else "number"
    return ExemplarSet(name, answer_type, tuple(exemplars))


def load_exemplars(name_or_path: str) -> ExemplarSet:
    """A built-in set (``math``, ``yesno``) or a JSON file by path."""
    if name_or_path in ("math", "yesno"):
        text = (resources.files("robusteval.prompts") / "exemplars" / f"{name_or_path}.json").read_text("utf-8")
        return parse_exemplars(json.loads(text), f"builtin:{name_or_path}")
    path = Path(name_or_path)
    if not path.is_file():
        builtin = sorted(set(BUILTIN_EXEMPLARS.values()))
        raise DataError(path, f"exemplar file not found (built-in sets: {', '.join(builtin)})"
                        f"{did_you_mean(name_or_path, builtin)}")
    from robusteval.data.loaders.files import read_json

    return parse_exemplars(read_json(path), str(path))


def check_exemplars(name_or_path: str | None) -> None:
    """Refuse exemplars that cannot load (a misspelt built-in name gets the closest one; a file is read and
    parsed); None (the answer type's built-in set) passes. Configs call it when built, before any model loads."""
    if name_or_path is not None:
        load_exemplars(name_or_path)


def exemplar_source(exemplars: str | None, answer_type: str) -> str:
    """What :func:`load_exemplars` takes: the given name or path, else the built-in set for the answer type."""
    return exemplars or BUILTIN_EXEMPLARS.get(answer_type, "math")


def exemplars_for(exemplars: str | None, answer_type: str) -> AnswerFirstPrompt:
    return AnswerFirstPrompt(load_exemplars(exemplar_source(exemplars, answer_type)))


def default_exemplars(answer_type: str) -> ExemplarSet:
    return load_exemplars(BUILTIN_EXEMPLARS.get(answer_type, "math"))


def format_answer(answer: str) -> str:
    return answer.strip().rstrip(".")


#: How exemplars are written: robusteval's ``The answer is y. rationale``, or the MATCHA authors' (``utils.py``
#: L291-292, ``create_input_prompt``: answer trigger, a space, the answer, a space, the rationale, a period).
EXEMPLAR_STYLES = ("ours", "authors")


def exemplar_style(counting: str | None) -> str:
    """The exemplar style of a MATCHA counting (``--count``): the authors' under ``authors``, else ours."""
    return "authors" if counting == "authors" else "ours"


def exemplar_reply(exemplar: Exemplar, style: str = "ours") -> str:
    """An exemplar's answer-first reply: ``The answer is y. rationale`` (ours) or ``The answer is y rationale.``
    (the authors': the answer as given, then the rationale and a period, whatever the rationale ends with)."""
    if style == "authors":
        return f"The answer is {exemplar.answer} {exemplar.rationale}."
    return f"The answer is {format_answer(exemplar.answer)}. {exemplar.rationale}"


@dataclass(frozen=True)
class AnswerFirstPrompt:
    """Builds answer-first prompts over one exemplar set."""

    exemplars: ExemplarSet
    style: str = "ours"  # EXEMPLAR_STYLES: how each exemplar's reply is written (exemplar_reply)

    def __post_init__(self) -> None:
        if self.style not in EXEMPLAR_STYLES:
            raise ValueError(f"exemplar style {self.style!r}: one of {', '.join(EXEMPLAR_STYLES)}")

    @property
    def prefix(self) -> str:
        """All exemplars, each ``Q: …\\nA: `` and its reply (:func:`exemplar_reply`), then a separator."""
        blocks = [f"{QUESTION_HEAD}{e.question}{ANSWER_HEAD} {exemplar_reply(e, self.style)}"
                  for e in self.exemplars.exemplars]
        return EXEMPLAR_SEPARATOR.join(blocks) + EXEMPLAR_SEPARATOR

    def segments(self, question: str) -> tuple[str, str, str, str]:
        """(prefix, question head, question, answer head): concatenated they form the full prompt."""
        return self.prefix, QUESTION_HEAD, question.strip(), ANSWER_HEAD

    def question_prompt(self, question: str) -> str:
        """The part after the shared prefix."""
        _, head, text, tail = self.segments(question)
        return head + text + tail

    def exemplar_turns(self) -> list[tuple[str, str]]:
        """(user question, assistant reply) per exemplar (:func:`exemplar_reply`)."""
        return [(e.question, exemplar_reply(e, self.style)) for e in self.exemplars.exemplars]

    def messages(self, question: str, system_prompt: str | None = None) -> list[Message]:
        """The chat form: [system] + exemplar (user, assistant) turns + the question as the final user turn.

        ``system_prompt``: None = :data:`DEFAULT_SYSTEM_PROMPT`, "" = no system turn. The final user turn is the
        stripped question exactly, so its text can be found in the rendered conversation.
        """
        return conversation(question.strip(), system=resolve_system_prompt(system_prompt, DEFAULT_SYSTEM_PROMPT),
                            history=self.exemplar_turns())

    def request(
        self,
        question: str,
        *,
        max_new_tokens: int = 256,
        chat: bool = False,
        system_prompt: str | None = None,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> GenerationRequest:
        """The answer-first request for ``question``: the exemplar prefix + ``Q: …\\nA:`` as text, or with
        ``chat`` the conversation of :meth:`messages`. Either way generation stops before a next question."""
        if chat:
            return GenerationRequest(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                                     stop=STOP_STRINGS, seed=seed, chat=True,
                                     messages=tuple(self.messages(question, system_prompt)))
        return GenerationRequest(self.question_prompt(question), max_new_tokens, temperature=temperature,
                                 top_p=top_p, stop=STOP_STRINGS, seed=seed, prefix=self.prefix)
