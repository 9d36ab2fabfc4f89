"""The template-authoring pipelines: ``draft`` (problems -> draft templates) and ``check`` (template files ->
findings). ``robusteval variants draft|check`` are thin shells over them; a notebook calls them the same way::

    from robusteval import variants

    report = variants.draft(variants.DraftConfig(data_file="problems.jsonl", out="drafts.yaml"))
    text = variants.draft_template("Mia has 4 red pencils and 3 blue pencils ...", "7", id="mia").to_yaml()
    checked = variants.check(variants.CheckConfig(["drafts.yaml"]))   # checked.failed, checked.findings

``check`` runs ``validate``'s check of the original answer first (:mod:`robusteval.variants.checks`), then the
deep checks of :mod:`robusteval.variants.lint`. Nothing here imports torch or loads a model.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robusteval.errors import UserError
from robusteval.lifecycle import public_entry
from robusteval.store import write_text_atomic
from robusteval.variants.configs import CheckConfig, DraftConfig
from robusteval.variants.drafting import TemplateDraft, draft_template, drafts_yaml
from robusteval.variants.lint import CheckSettings, Finding, TemplateStats, check_loaded
from robusteval.variants.template import load_templates


# ----------------------------------------------------------------------------------------------- draft
@dataclass
class DraftReport:
    drafts: list[TemplateDraft]
    text: str  # the YAML file
    written: Path | None = None


@public_entry
def draft(config: DraftConfig) -> DraftReport:
    """Draft one template per problem; writes ``config.out`` when set (refusing to overwrite without force)."""
    if config.question is not None:
        question = sys.stdin.read() if config.question == "-" else config.question
        if not question.strip():
            raise UserError("draft: the question is empty" + (" (nothing on stdin)" if config.question == "-" else ""))
        drafts = [draft_template(question.strip("\n"), config.answer, id=config.id)]
    else:
        examples = config.data_spec().load()
        source = Path(str(config.data_file)).name
        drafts = [draft_template(e.question, e.answer, id=e.id, source=source) for e in examples]
    report = DraftReport(drafts, drafts_yaml(drafts))
    if config.out:
        out = Path(config.out)
        if out.exists() and not config.force:
            raise UserError(f"draft: {out} exists (it may hold edited templates); pass --force to overwrite it")
        write_text_atomic(out, report.text)
        report.written = out
    return report


# ----------------------------------------------------------------------------------------------- check
@dataclass
class CheckReport:
    findings: list[Finding]  # load problems, then each template's findings, in file order
    stats: list[TemplateStats]  # one per template that loaded
    warnings: list[str] = field(default_factory=list)  # from the loaders (e.g. CSV import notes)
    n_templates: int = 0  # templates found, loaded or not
    written: Path | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def failed(self) -> bool:
        return bool(self.errors)

    @property
    def counts(self) -> dict[str, int]:
        with_errors = {f.template_id for f in self.findings if f.severity == "error"}
        with_warnings = {f.template_id for f in self.findings if f.severity == "warning"} - with_errors
        return {
            "templates": self.n_templates,
            "ok": self.n_templates - len(with_errors) - len(with_warnings),
            "with_warnings": len(with_warnings),
            "with_errors": len(with_errors),
            "errors": len(self.errors),
            "warnings": len(self.findings) - len(self.errors),
        }

    def summary_line(self) -> str:
        c = self.counts
        return (f"{c['templates']} templates checked: {c['ok']} ok, {c['with_warnings']} with warnings only, "
                f"{c['with_errors']} with errors ({c['errors']} errors, {c['warnings']} warnings)")

    def to_json(self) -> dict[str, Any]:
        return {
            "counts": self.counts,
            "findings": [f.to_json() for f in self.findings],
            "templates": [vars(s) for s in self.stats],
        }


@public_entry
def check(config: CheckConfig) -> CheckReport:
    """Check every template of the files (see :mod:`robusteval.variants.lint`); writes ``config.json`` when set."""
    from robusteval.variants.pipeline import template_paths

    loaded = load_templates(template_paths(config.templates), prefix_ids=config.prefix_ids)
    settings = CheckSettings(draws=config.draws, n=config.n, seed=config.seed, min_rate=config.min_rate)
    findings, stats = check_loaded(loaded, settings)
    report = CheckReport(
        findings, stats, [w for _, result in loaded for w in result.warnings],
        sum(len(result.templates) + len(result.problems) for _, result in loaded),
    )
    if config.json:
        report.written = Path(config.json)
        write_text_atomic(report.written, json.dumps(report.to_json(), indent=2, ensure_ascii=False) + "\n")
    return report
