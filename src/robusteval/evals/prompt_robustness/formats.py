"""Equivalent prompts for a spread: formats generated from FormatSpread's grammar, and prompts read from a file.

A classification template's item is read as field lines and an answer line: ``Question: $text`` ...
``Answer:`` (each line a field name, a separator and a ``$field``; the last line a name and the separator),
and each few-shot demonstration is the same item answered. A :class:`Format` renders both with other choices
(Sclar et al. 2023, *Quantifying Language Models' Sensitivity to Spurious Features in Prompt Design*, their
grammar's separators, casing and spacing; the answer field's name as Mizrahi et al. 2024 vary it):

* ``separator`` between a field's name and its value (``": "``, ``" - "``, ``":: "``, ``" = "``, ``":\\n"``, ...);
* ``casing`` of the field names (as written, lower, upper, title);
* ``spacing`` between the fields of one item (a newline, a space, ``" | "``, ...);
* ``answer_field``: the answer line's name (``Answer``, ``Response``, ``Output``, ``A``, ``Label``).

Only the format changes: every field's value (the question's text) is inserted byte-identical, the instruction
paragraph and the demonstrations' values and answers are kept. ``sample_formats`` draws N distinct formats,
seeded; ``read_prompts`` reads a file of instructions (one per line) or JSON lines of
``{"name", "instruction", "separator", "casing", "spacing", "answer_field"}`` (each key optional).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from robusteval.errors import DataError, UserError
from robusteval.evals.classification import ClassificationTemplate
from robusteval.evals.prompt_robustness.surfaces import PARAGRAPH, PromptSurfaces
from robusteval.seeding import derive_random
from robusteval.store import unit_key

SEPARATORS = (": ", " : ", ":: ", " - ", " = ", ":\n", " -> ")
CASINGS = ("as-is", "lower", "upper", "title")
SPACINGS = ("\n", " ", " | ", "\n\t", " || ")
ANSWER_FIELDS = ("Answer", "Response", "Output", "A", "Label")
FORMAT_KEYS = ("separator", "casing", "spacing", "answer_field")
_LINE = re.compile(r"(?P<name>[^\n$]*?[^\s$:])(?P<sep>\s*:\s*)\$\{?(?P<field>\w+)\}?")
_ANSWER = re.compile(r"(?P<name>[^\n$]*?[^\s$:])\s*:\s*")


@dataclass(frozen=True)
class Format:
    """One point of the grammar (None: as the template writes it)."""

    separator: str | None = None
    casing: str = "as-is"
    spacing: str | None = None
    answer_field: str | None = None

    def __post_init__(self) -> None:
        if self.casing not in CASINGS:
            raise UserError(f"casing {self.casing!r}: one of {', '.join(CASINGS)}")

    def describe(self) -> dict[str, str | None]:
        return {key: getattr(self, key) for key in FORMAT_KEYS}


@dataclass(frozen=True)
class ItemLayout:
    """The template's item as field lines and an answer line, with its own separator and spacing."""

    fields: tuple[tuple[str, str], ...]  # (name, $field)
    answer: str
    separator: str
    spacing: str

    @classmethod
    def of(cls, template: ClassificationTemplate) -> ItemLayout:
        lines = template.prompt.split("\n")
        found = [_LINE.fullmatch(line) for line in lines[:-1]]
        answer = _ANSWER.fullmatch(lines[-1]) if len(lines) > 1 else None
        if answer is None or not found or any(match is None for match in found):
            raise UserError(f"template {template.name!r}: a format spread needs an item of lines 'Name: $field' "
                            f"and a last line 'Answer:', got {template.prompt!r}")
        matches = [match for match in found if match is not None]
        return cls(tuple((m.group("name"), m.group("field")) for m in matches), answer.group("name"),
                   matches[0].group("sep"), "\n")

    def render(self, fmt: Format, values: Mapping[str, str] | None = None, answer: str | None = None) -> str:
        """The item in ``fmt``: ``$field`` placeholders (``values`` None) or the values, then the answer line
        (followed by ``answer`` for a demonstration)."""
        sep = self.separator if fmt.separator is None else fmt.separator
        spacing = self.spacing if fmt.spacing is None else fmt.spacing
        parts = [_case(name, fmt.casing) + sep + ("${" + field + "}" if values is None else values[field])
                 for name, field in self.fields]
        head = _case(self.answer if fmt.answer_field is None else fmt.answer_field, fmt.casing)
        tail = head + sep.rstrip(" ") if answer is None else head + sep + answer
        return spacing.join([*parts, tail])


def _case(name: str, casing: str) -> str:
    return {"lower": name.lower(), "upper": name.upper(), "title": name.title()}.get(casing, name)


def format_template(template: ClassificationTemplate, fmt: Format, instruction: str | None = None
                    ) -> ClassificationTemplate:
    """``template`` in ``fmt`` (its item and every demonstration re-rendered), with ``instruction`` as its
    instruction paragraph when given; a template of its own source hash (each prompt's answers stored apart)."""
    layout = ItemLayout.of(template)
    surfaces = PromptSurfaces.of(template)
    paragraphs = list(surfaces.paragraphs)
    for ex in surfaces.exemplars:
        paragraphs[ex.paragraph] = layout.render(fmt, ex.fields, ex.answer.strip())
    if instruction is not None:
        if surfaces.header is None:
            paragraphs.insert(0, instruction)
        else:
            paragraphs[surfaces.header] = instruction
    prefix = PARAGRAPH.join(paragraphs) + PARAGRAPH if paragraphs else ""
    prompt = layout.render(fmt)
    probe = {field: f"<{field}>" for _, field in layout.fields}
    if (dataclasses.replace(template, prompt=prompt).filled_prompt(probe) == template.filled_prompt(probe)
            and prefix == template.filled_prefix()):
        return template  # the template's own prompt: its answers are the template's
    return dataclasses.replace(template, prefix=prefix.replace("$", "$$"), prompt=prompt,
                               source_sha=unit_key(template.source_sha, "format", prefix, prompt))


def sample_formats(template: ClassificationTemplate, n: int, seed: int) -> list[Format]:
    """``n`` distinct formats of the grammar, drawn with ``seed`` (formats that render ``template``'s item the
    same are one format); fewer than asked is refused."""
    layout = ItemLayout.of(template)
    grammar = [Format(sep, casing, spacing, answer) for sep in SEPARATORS for casing in CASINGS
               for spacing in SPACINGS for answer in ANSWER_FIELDS]
    derive_random(seed, "format-spread").shuffle(grammar)
    out: list[Format] = []
    seen: set[str] = set()
    for fmt in grammar:
        rendered = layout.render(fmt, answer="x")
        if rendered not in seen:
            seen.add(rendered)
            out.append(fmt)
        if len(out) == n:
            return out
    raise UserError(f"the format grammar has {len(out)} distinct formats of template {template.name!r}, "
                    f"fewer than the {n} asked")


@dataclass(frozen=True)
class PromptChoice:
    """One prompt of a spread: its name, the instruction (None: the template's) and the format."""

    name: str
    instruction: str | None
    fmt: Format


def read_prompts(path: str) -> list[PromptChoice]:
    """The prompts of a file: one instruction per line, or JSON lines (an object per line, keys of
    :data:`FORMAT_KEYS`, ``instruction`` and ``name``); blank lines skipped."""
    file = Path(path)
    try:
        lines = file.read_text("utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror})") from None
    out: list[PromptChoice] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(path, f"invalid JSON: {exc.msg}", line=number) from None
            unknown = sorted(set(row) - {*FORMAT_KEYS, "instruction", "name"})
            if unknown:
                raise DataError(path, f"unknown keys {', '.join(unknown)} (known: name, instruction, "
                                f"{', '.join(FORMAT_KEYS)})", line=number)
            bad = [key for key in (*FORMAT_KEYS, "instruction", "name")
                   if key in row and not isinstance(row[key], str)]
            if bad:
                raise DataError(path, f"{bad[0]} must be a string", line=number)
            try:
                fmt = Format(row.get("separator"), row.get("casing", "as-is"), row.get("spacing"),
                             row.get("answer_field"))
            except UserError as exc:
                raise DataError(path, str(exc), line=number) from None
            out.append(PromptChoice(row.get("name") or f"file{number}", row.get("instruction"), fmt))
        else:
            out.append(PromptChoice(f"file{number}", line.strip(), Format()))
    if not out:
        raise UserError(f"{path}: no prompts (one instruction per line, or JSON lines)")
    names = [choice.name for choice in out]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UserError(f"{path}: prompt names repeat: {', '.join(repeated)}")
    return out


def spread_prompts(template: ClassificationTemplate, choices: Sequence[PromptChoice]
                   ) -> dict[str, ClassificationTemplate]:
    """name -> the template each prompt asks with."""
    return {choice.name: format_template(template, choice.fmt, choice.instruction) for choice in choices}
