"""A classification prompt taken apart into the surfaces a user may perturb, and put back together.

The prompt a :class:`~robusteval.evals.classification.LabelClassifier` sends is ``[system turn] + prefix + item``:
the template's prefix (its instruction paragraph, then its few-shot demonstrations, paragraphs separated by a
blank line) and the item (the template's ``prompt`` filled with one example). The surfaces:

* ``instruction``: the prefix's first paragraph when it is no demonstration (its answer-format sentence included,
  as PromptBench perturbs the whole instruction);
* ``format``: the answer-format line, the last sentence of that paragraph that names every label
  (``Answer with one word: yes or no.``);
* ``exemplars``: the text fields of every demonstration (a paragraph that is the template's ``prompt`` filled,
  followed by its answer); the answer itself and the field heads (``Question:``) are left alone;
* ``system``: the chat's system turn.

The item is never a surface: every perturbed prompt asks each question with byte-identical text.
"""

from __future__ import annotations

import dataclasses
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass

from robusteval.errors import UserError
from robusteval.evals.classification import ClassificationTemplate
from robusteval.store import unit_key

TARGETS = ("instruction", "system", "format", "exemplars")
PARAGRAPH = "\n\n"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*|\n+")


@dataclass(frozen=True)
class Exemplar:
    """One demonstration paragraph: the template's prompt filled with ``fields``, then ``answer``."""

    paragraph: int
    fields: dict[str, str]
    answer: str


@dataclass(frozen=True)
class PromptVariant:
    """A whole prompt but the item: the prefix as sent (placeholders filled) and the system turn."""

    prefix: str
    system: str | None


@dataclass(frozen=True)
class PromptSurfaces:
    """The template's prefix cut into paragraphs, with where each surface lies in them."""

    template: ClassificationTemplate
    system: str | None
    paragraphs: tuple[str, ...]
    #: Index of the instruction paragraph (None: the prefix opens with a demonstration, or is empty).
    header: int | None
    #: ``(start, end)`` of the answer-format sentence in the instruction paragraph (None: no sentence names
    #: every label).
    format_span: tuple[int, int] | None
    exemplars: tuple[Exemplar, ...]

    @classmethod
    def of(cls, template: ClassificationTemplate, system: str | None = None) -> PromptSurfaces:
        prefix = template.filled_prefix()
        body = prefix[: -len(PARAGRAPH)] if prefix.endswith(PARAGRAPH) else prefix
        paragraphs = tuple(body.split(PARAGRAPH)) if body.strip() else ()
        exemplars = tuple(ex for i, text in enumerate(paragraphs) if (ex := _exemplar(template, i, text)))
        demos = {ex.paragraph for ex in exemplars}
        header = 0 if paragraphs and 0 not in demos and paragraphs[0].strip() else None
        span = _format_span(paragraphs[header], template) if header is not None else None
        return cls(template, system or None, paragraphs, header, span, exemplars)

    # ------------------------------------------------------------------ the pieces a target perturbs
    def pieces(self, target: str) -> dict[str, str]:
        """``piece id -> text`` of ``target``; a surface the prompt lacks is refused, naming what is there."""
        name = self.template.name
        if target == "system":
            if not self.system:
                raise UserError("the prompt has no system turn (give system_prompt, with chat on)")
            return {"system": self.system}
        if target == "instruction":
            if self.header is None:
                raise UserError(f"template {name!r} has no instruction paragraph (its prefix "
                                f"{'is empty' if not self.paragraphs else 'opens with a demonstration'})")
            return {"instruction": self.paragraphs[self.header]}
        if target == "format":
            if self.header is None or self.format_span is None:
                raise UserError(f"template {name!r} has no answer-format line (no sentence of its "
                                f"instruction names every label: {', '.join(self.template.verbalizers.values())})")
            start, end = self.format_span
            return {"format": self.paragraphs[self.header][start:end]}
        if target == "exemplars":
            if not self.exemplars:
                raise UserError(f"template {name!r} has no few-shot demonstrations (no paragraph "
                                "of its prefix is its prompt filled and answered)")
            return {f"exemplar{i}.{key}": value for i, ex in enumerate(self.exemplars)
                    for key, value in ex.fields.items()}
        raise UserError(f"unknown target {target!r}; one of {', '.join(TARGETS)}")

    def clean(self) -> PromptVariant:
        return PromptVariant(self.template.filled_prefix(), self.system)

    def rebuild(self, target: str, texts: Mapping[str, str]) -> PromptVariant:
        """The prompt with ``target``'s pieces replaced by ``texts`` (piece id -> text; a missing id keeps its
        original), every other byte as it was."""
        pieces = {**self.pieces(target), **texts}
        if target == "system":
            return PromptVariant(self.template.filled_prefix(), pieces["system"])
        paragraphs = list(self.paragraphs)
        if target == "instruction" and self.header is not None:
            paragraphs[self.header] = pieces["instruction"]
        elif target == "format" and self.header is not None and self.format_span is not None:
            start, end = self.format_span
            text = paragraphs[self.header]
            paragraphs[self.header] = text[:start] + pieces["format"] + text[end:]
        elif target == "exemplars":
            for i, ex in enumerate(self.exemplars):
                fields = {key: pieces[f"exemplar{i}.{key}"] for key in ex.fields}
                paragraphs[ex.paragraph] = _fill(self.template, fields) + ex.answer
        return PromptVariant(PARAGRAPH.join(paragraphs) + PARAGRAPH if paragraphs else "", self.system)


def variant_template(template: ClassificationTemplate, variant: PromptVariant) -> ClassificationTemplate:
    """``template`` with ``variant``'s prefix, and a source hash of its own (the classifier's answers are keyed by
    it, so each prompt's answers are stored apart); the clean prefix gives the template back unchanged."""
    if variant.prefix == template.filled_prefix():
        return template
    return dataclasses.replace(template, prefix=variant.prefix.replace("$", "$$"),
                               source_sha=unit_key(template.source_sha, "prefix", variant.prefix))


def _fill(template: ClassificationTemplate, fields: Mapping[str, str]) -> str:
    return string.Template(template.prompt).substitute({**fields, "label_list": template.label_list})


def _exemplar(template: ClassificationTemplate, index: int, text: str) -> Exemplar | None:
    """The demonstration ``text`` is, when it is the template's prompt filled and followed by an answer naming a
    label; None otherwise."""
    pattern: list[str] = []
    names: list[str] = []
    cursor = 0
    source = template.prompt
    for match in string.Template.pattern.finditer(source):
        pattern.append(re.escape(source[cursor : match.start()]))
        cursor = match.end()
        name = match.group("named") or match.group("braced")
        if match.group("escaped") is not None:
            pattern.append(re.escape("$"))
        elif name == "label_list":
            pattern.append(re.escape(template.label_list))
        elif name is not None:
            pattern.append(f"(?P={name})" if name in names else f"(?P<{name}>.+?)")
            names.append(name)
    pattern.append(re.escape(source[cursor:]))
    found = re.fullmatch("".join(pattern) + r"(?P<answer_>.*)", text, re.DOTALL)
    if found is None or not names:
        return None
    fields = {name: found.group(name) for name in dict.fromkeys(names)}
    answer = found.group("answer_")
    if template.parse(answer) is None or _fill(template, fields) + answer != text:
        return None
    return Exemplar(index, fields, answer)


def _format_span(paragraph: str, template: ClassificationTemplate) -> tuple[int, int] | None:
    """The last sentence of ``paragraph`` naming every label's verbalizer, as (start, end)."""
    words = list(template.verbalizers.values())
    found: tuple[int, int] | None = None
    start = 0
    for end_match in [*_SENTENCE_END.finditer(paragraph), None]:
        end = end_match.start() if end_match is not None else len(paragraph)
        sentence = paragraph[start:end]
        if sentence.strip() and all(_names(sentence, word) for word in words):
            lead = len(sentence) - len(sentence.lstrip())
            found = (start + lead, end)
        if end_match is not None:
            start = end_match.end()
    return found


def _names(sentence: str, word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", sentence, re.IGNORECASE) is not None
