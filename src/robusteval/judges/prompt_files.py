"""Judge prompt templates, built in or a user's file (``--judge-prompt FILE``), and their checks.

A judge prompt is a :class:`string.Template` text: ``$name`` (or ``${name}``) placeholders, filled in one pass
with the item's fields, no ``eval`` or ``str.format``. A literal dollar sign is written ``$$``. The placeholders
a task takes (:data:`PLACEHOLDERS`):

* reasoning: ``$question``, ``$reference`` (the clean response), ``$candidate`` (the response judged);
  ``$candidate`` must appear, the others may be left out (``prompts/reasoning_pair.txt`` shows no question);
* semantic: ``$original``, ``$perturbed``; ``$perturbed`` must appear.

The judge model answers ``1`` (the property holds) or ``0``: end the prompt at a cue such as ``Rating:``; the
log-prob path scores ``" 1"`` and ``" 0"`` right after it. :func:`load_judge_prompt` reads and checks a file;
any problem is a :class:`~robusteval.errors.UserError` of one line naming the file (and line).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from string import Template

from robusteval.errors import UserError

#: The placeholders each judge task's prompt may use; the last one of each must appear.
PLACEHOLDERS: dict[str, tuple[str, ...]] = {
    "reasoning": ("question", "reference", "candidate"),
    "semantic": ("original", "perturbed"),
}
#: The placeholder a prompt of each task cannot do without: the text being judged.
REQUIRED: dict[str, str] = {"reasoning": "candidate", "semantic": "perturbed"}


def builtin_prompts() -> list[str]:
    """The names of the prompts shipped in ``judges/prompts/``."""
    folder = resources.files("robusteval.judges") / "prompts"
    return sorted(entry.name[: -len(".txt")] for entry in folder.iterdir() if entry.name.endswith(".txt"))


def load_prompt(name: str) -> str:
    """The text of the built-in prompt ``judges/prompts/<name>.txt``."""
    path = resources.files("robusteval.judges") / "prompts" / f"{name}.txt"
    if "/" in name or "\\" in name or not path.is_file():
        raise UserError(f"no built-in judge prompt '{name}'; built-in prompts: {', '.join(builtin_prompts())}")
    return path.read_text(encoding="utf-8")


def check_template(text: str, task: str, where: str) -> None:
    """Refuse a template that cannot judge ``task`` items, with one line naming ``where`` (a file) and the line:
    a ``$`` that starts no placeholder, an unknown placeholder, or no placeholder for the judged text."""
    # A task of no built-in kind (a plug-in judge's own): its placeholders are its business, the syntax is checked.
    allowed = PLACEHOLDERS.get(task)
    takes = ", ".join(f"${name}" for name in allowed or ())
    found: set[str] = set()
    for match in Template.pattern.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        if match.group("invalid") is not None:
            shown = text[match.start() : match.start() + 12].split("\n")[0]
            raise UserError(f"{where}:{line}: '{shown}' is not a placeholder; a {task} prompt takes {takes}; "
                            "write a literal dollar sign as $$")
        name = match.group("named") or match.group("braced")
        if name is None or allowed is None:  # "$$": a literal dollar sign
            continue
        if name not in allowed:
            raise UserError(f"{where}:{line}: unknown placeholder ${name}; a {task} prompt takes {takes}")
        found.add(name)
    required = REQUIRED.get(task)
    if required is not None and required not in found:
        raise UserError(f"{where}: no ${required} placeholder; a {task} prompt must show the judged text as "
                        f"${required} (it takes {takes}; a literal dollar sign is written $$)")


def load_judge_prompt(path: str, task: str) -> str:
    """The text of the judge prompt file ``path`` for ``task`` ("reasoning" or "semantic"), checked.

    Refused with one line naming the file (and the line where it applies): a file that is missing or cannot be
    read, text that is not UTF-8, a ``$`` that starts no placeholder (a literal one is ``$$``), a placeholder
    the task does not take, or no placeholder for the judged text (``$candidate``, ``$perturbed``).
    """
    if task not in PLACEHOLDERS:
        raise ValueError(f"task {task!r}: expected one of {', '.join(PLACEHOLDERS)}")
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UserError(f"judge prompt {path}: cannot read it ({reason.lower()})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line}: judge prompt is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    check_template(text, task, str(path))
    return text


def check_judge_prompt(path: str | None, task: str) -> None:
    """Refuse a ``--judge-prompt`` file :func:`load_judge_prompt` would refuse (unset is fine), before any model
    loads: configs call it so a bad prompt leaves no run directory behind."""
    if path is not None:
        load_judge_prompt(path, task)
