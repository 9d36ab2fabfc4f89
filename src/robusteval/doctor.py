"""``robusteval doctor``: is this installation complete? Every packaged file is loaded through the code that
uses it, and every optional extra is probed without importing heavy packages.

A wheel built without a ``package-data`` entry passes ``pip install`` and fails only when a user reaches that
file; loading each one here (CI runs this against the installed wheel) turns that into an immediate failure.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources

from robusteval.extras import MODULE_EXTRAS, install_hint


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def _packaged(name: str, load: Callable[[], str]) -> Check:
    try:
        return Check(name, True, load())
    except Exception as exc:  # a missing or broken file in the installation, reported, not raised
        return Check(name, False, f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}")


def _samples() -> str:
    from robusteval.data.loaders import load_dataset

    counts = []
    for name, answer_type in (("math", "number"), ("yesno", "yesno")):
        path = resources.files("robusteval.data") / "samples" / f"{name}.jsonl"
        counts.append(f"{name} {len(load_dataset('jsonl', str(path), answer_type=answer_type))}")
    return "sample questions: " + ", ".join(counts)


def _exemplars() -> str:
    from robusteval.prompts.answer_first import load_exemplars

    return "exemplar sets: " + ", ".join(f"{n} {len(load_exemplars(n).exemplars)}" for n in ("math", "yesno"))


def _judge_prompts() -> str:
    from robusteval.judges.llm import load_prompt

    names = ("reasoning", "semantic")
    for name in names:
        if "$" not in load_prompt(name):
            raise ValueError(f"judge prompt {name} has no placeholders")
    return "judge prompts: " + ", ".join(names)


def _classification_templates() -> str:
    from robusteval.evals.classification import BUILTIN_TEMPLATES, ClassificationTemplate

    for name in BUILTIN_TEMPLATES:
        ClassificationTemplate.load(name, ["entailment", "neutral", "contradiction"])
    return "classification templates: " + ", ".join(BUILTIN_TEMPLATES)


def _variant_templates() -> str:
    from robusteval.variants.template import load_template_file

    schema = json.loads((resources.files("robusteval.variants") / "template.schema.json").read_text("utf-8"))
    if "properties" not in schema and "$defs" not in schema:
        raise ValueError("template.schema.json has no properties")
    with resources.as_file(resources.files("robusteval.variants") / "example_templates.yaml") as path:
        loaded = load_template_file(path)
    if loaded.problems or not loaded.templates:
        raise ValueError(f"example templates do not load: {loaded.problems[:1]}")
    return f"template schema and {len(loaded.templates)} example templates"


def _report_assets() -> str:
    from robusteval.report.html import asset

    sizes = {name: len(asset(name)) for name in ("report.css", "report.js")}
    if not all(sizes.values()):
        raise ValueError(f"empty report asset: {sizes}")
    return "report style and script"


def _review_assets() -> str:
    from robusteval.perturbations.review.page import asset

    sizes = {name: len(asset(name)) for name in ("review.css", "review.js")}
    if not all(sizes.values()):
        raise ValueError(f"empty review-page asset: {sizes}")
    return "review page style and script"


def _type_marker() -> str:
    """``py.typed`` (PEP 561): without it a type checker reads every name of the installed package as Any."""
    if not (resources.files("robusteval") / "py.typed").is_file():
        raise FileNotFoundError("robusteval/py.typed is missing: type checkers will not read robusteval's types")
    return "py.typed (type checkers read the API's types)"


PACKAGED: tuple[tuple[str, Callable[[], str]], ...] = (
    ("samples", _samples),
    ("exemplars", _exemplars),
    ("judge prompts", _judge_prompts),
    ("classification templates", _classification_templates),
    ("variant templates", _variant_templates),
    ("report assets", _report_assets),
    ("review page assets", _review_assets),
    ("type marker", _type_marker),
)


def check_installation() -> tuple[list[Check], list[Check]]:
    """(packaged-data checks, optional-package checks). Packaged data must all pass; extras are informative."""
    packaged = [_packaged(name, load) for name, load in PACKAGED]
    extras: dict[str, list[str]] = {}
    for module, extra in MODULE_EXTRAS.items():
        extras.setdefault(extra, []).append(module)
    optional = []
    for extra, modules in sorted(extras.items()):
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
        detail = "installed" if not missing else f"missing {', '.join(missing)}: {install_hint(extra)}"
        optional.append(Check(f"extra [{extra}]", not missing, detail))
    return packaged, optional
