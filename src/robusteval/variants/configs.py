"""The typed configs of the VAR-MATH pipelines (:mod:`robusteval.variants.pipeline`).

Kept apart from the pipelines so ``robusteval variants … --help`` builds its flags without importing the
sampler, the grader or numpy. Each field is one flag (``robusteval.config.option``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from robusteval.config import (
    ConfigError,
    check_at_least,
    check_choices,
    check_positive,
    field_check,
    option,
    validated,
)
from robusteval.data.answers.graders import MATH_GRADER_HELP, MATH_GRADERS, check_math_grader
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.seeding import DEFAULT_SEED
from robusteval.text.thinking import ReasoningOptions

if TYPE_CHECKING:
    from robusteval.variants.grading import VariantInstance

#: The seed of the published VAR-MATH instance files: ``--compat var-math`` replays them by default.
COMPAT_SEED = 42
COMPAT_MODES = ("var-math",)

#: Template files: ``"a.yaml,b.csv"`` (as ``--templates`` takes them) or a sequence of paths.
TemplatePaths = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]

_TEMPLATES_HELP = "template files, comma-separated, in order: native .yaml/.json or VAR-MATH .csv"


@dataclass(frozen=True)
class TemplateFiles:
    """The template files a ``variants`` subcommand reads, declared once: the first fields of each (positional in
    that order, as before)."""

    templates: TemplatePaths = option(metavar="PATH[,PATH…]", help=_TEMPLATES_HELP)
    prefix_ids: bool = option(False, help="prefix template ids with their file name (when ids collide across files)")


@validated
@dataclass(frozen=True)
class InstantiateConfig(TemplateFiles):
    """``variants instantiate``: N distinct, seeded instances per template."""

    n: int = option(5, help="instances per template")
    seed: int | None = option(
        None, help=f"random seed (default: {DEFAULT_SEED}; with --compat var-math {COMPAT_SEED}, the seed of "
        "the published VAR-MATH files)"
    )
    compat: str | None = option(None, choices=COMPAT_MODES, help="replay another generator exactly")
    exclude_original: bool = option(
        False, help="never use a template's original values (native mode; needs 'original' in the template)"
    )
    out: str | None = option(None, metavar="FILE.jsonl", help="write all instances to one JSONL file")
    out_dir: str | None = option(None, metavar="DIR",
                                 help="write one JSONL per template file (<file stem>.jsonl)")
    originals: str | None = option(
        None, metavar="FILE.jsonl",
        help="also write the original problems: each template at its original values, id = the template id "
        "(the file `variants eval --originals` reads); a template whose originals do not check is left out, "
        "said on stderr")

    @property
    def resolved_seed(self) -> int:
        # Compat mode replays one published generator, so its default is that generator's seed.
        if self.seed is not None:
            return self.seed
        return COMPAT_SEED if self.compat else DEFAULT_SEED

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse settings that cannot run (also when built)."""
        check_at_least(self, "n", 1, optional=False)
        check_choices(self)
        if self.compat and self.exclude_original:
            raise ConfigError(self, "exclude_original", f"cannot be combined with {{compat={self.compat}}} (the "
                              "original generator has no such option)")


@validated
@dataclass(frozen=True)
class ValidateConfig(TemplateFiles):
    """``variants validate``: do the templates reproduce their original answers?"""

    # Named like its flag so a --config TOML file keeps the key "json".
    json: str | None = option(None, metavar="FILE", help="also write the full report as JSON")


@validated
@dataclass(frozen=True)
class GradingConfig:
    """How answers are graded and intervals computed.

    Not part of a run's identity: ``variants eval`` grades the stored generations anew on every invocation, so
    a finished run can be re-graded (by another ``math_grader`` too); its summary records the settings and
    every graded row the grader that decided it.
    """

    rel_tol: float = option(1e-4, help="relative tolerance of numeric comparison", identity=False)
    grade_timeout: float = option(3.0, help="seconds per symbolic (or math-verify) comparison", identity=False)
    accept_percent: bool = option(
        False, help="also accept the prediction x100 or /100 (as VAR-MATH's grader does) when it and the gold "
        "answer are plain numbers", identity=False
    )
    math_grader: str = option("builtin", choices=MATH_GRADERS, help=MATH_GRADER_HELP, identity=False)
    bootstrap_rounds: int = option(1000, help="bootstrap rounds of the 95%% CIs", identity=False)
    bootstrap_seed: int = option(
        DEFAULT_SEED, help="seed of the bootstrap (independent of --seed)", identity=False
    )

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse settings that cannot grade (also when built)."""
        check_at_least(self, "bootstrap_rounds", 0, optional=False)
        check_at_least(self, "rel_tol", 0, optional=False)
        check_positive(self, "grade_timeout", optional=False)
        with field_check(self, "math_grader"):
            check_math_grader(self.math_grader)

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`robusteval.variants.grading.grade_all`."""
        return {
            "rel_tol": self.rel_tol,
            "timeout": self.grade_timeout,
            "accept_percent": self.accept_percent,
            "math_grader": self.math_grader,
            "bootstrap_rounds": self.bootstrap_rounds,
            "seed": self.bootstrap_seed,
        }


@dataclass(frozen=True)
class InstancesFile:
    """The instances a ``variants`` subcommand reads (``variants instantiate``'s output), declared once: the first
    field of each (positional, as before)."""

    instances: str = option(metavar="FILE.jsonl", help="instances from `variants instantiate` (with their gold "
                            "answers)")


# ``config.nested()`` gives no default; grading has a sensible one, so a notebook need not spell it out. Same
# metadata: its fields become flags of the command (in a "grading" group) and flatten into the identity.
_NESTED = {"cli": True, "nested": True, "identity": True}


@validated
@dataclass(frozen=True)
class ScoreConfig(InstancesFile):
    """``variants score``: grade a predictions file made elsewhere against an instances file."""

    predictions: str = option(metavar="FILE.jsonl", help="model predictions")
    out: str | None = option(
        None, metavar="FILE.json", help="where to write the scores (default: <predictions>.scores.json)"
    )
    grading: GradingConfig = dataclasses.field(default_factory=GradingConfig, metadata=_NESTED)

    @property
    def out_path(self) -> Path:
        return Path(self.out) if self.out else Path(self.predictions).with_suffix(".scores.json")


@validated
@dataclass(frozen=True)
class VariantsEvalConfig(InstancesFile, GenerationFields):
    """``variants eval``: a model's strict/loose scores on an instances file, K samples per instance."""

    samples: int = option(1, help="samples per instance (K)")
    generation: GenerationOptions = generation_block("chat", "system_prompt", "max_new_tokens", "temperature", "top_p",
                                                     max_new_tokens=2048)
    seed: int = option(DEFAULT_SEED,
                       help="sampling seed; sample k of every instance gets a seed derived from it")
    # A limit only leaves units out; stored ones stay valid, so it is not part of the identity.
    limit: int | None = option(None, help="only the first N instances", identity=False)
    # Where the original problems' accuracy comes from (the diagnosis only: the variants' generations do not
    # depend on it, so neither is part of the identity and a finished run can be diagnosed again).
    originals: str | None = option(
        None, metavar="FILE.jsonl", identity=False,
        help="the original problems (one instance per problem, id = the problem id), asked in the same call "
        "with the same settings into <out>/original: the diagnosis compares the variants with them")
    original_run: str | None = option(
        None, metavar="DIR", identity=False,
        help="an earlier `variants eval` run of the same model on the original problems, for the diagnosis")
    grading: GradingConfig = dataclasses.field(default_factory=GradingConfig, metadata=_NESTED)
    # A reasoning model's trace is never graded: the answer is read from the reply (--reasoning, --think-tags).
    thinking: ReasoningOptions = dataclasses.field(default_factory=ReasoningOptions, metadata=_NESTED)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """Refuse settings that cannot run (also when built)."""
        for name in ("samples", "limit"):
            check_at_least(self, name, 1, optional=name == "limit")
        if self.originals is not None and self.original_run is not None:
            raise ConfigError(self, "originals", "give either {originals} or {original_run}, not both")
        self.grading.check()

    def sampling(self) -> tuple[float, float]:
        """(temperature, top_p): greedy for one sample, T=0.6 / top-p 0.95 for several, unless set."""
        one = self.samples == 1
        temperature = self.temperature if self.temperature is not None else (0.0 if one else 0.6)
        top_p = self.top_p if self.top_p is not None else (1.0 if one else 0.95)
        return temperature, top_p

    def load_instances(self) -> list[VariantInstance]:
        """The instances to run (the first ``limit``); a bad file fails here, before any model loads."""
        from robusteval.variants.grading import load_instances

        instances = load_instances(self.instances)
        return instances[: self.limit] if self.limit else instances


@validated
@dataclass(frozen=True)
class ImportConfig:
    """``variants import``: a VAR-MATH template CSV as native templates."""

    templates: str = option(metavar="FILE.csv", help="a VAR-MATH template CSV")
    out: str | None = option(None, metavar="FILE.yaml", help="native template file to write (.yaml or .json)")


@validated
@dataclass(frozen=True)
class DraftConfig:
    """``variants draft``: draft templates from fixed problems (a question and answer, or a dataset file)."""

    question: str | None = option(None, metavar="TEXT", help="the problem text ('-': read it from stdin)")
    answer: str | None = option(None, metavar="TEXT", help="with --question: the original answer")
    id: str = option("problem", help="with --question: the template id")
    data_file: str | None = option(None, metavar="PATH",
                                   help="a file of problems (instead of --question), read as --dataset")
    dataset: str = option("jsonl", metavar="NAME", help="with --data-file: its format (jsonl, csv, gsm8k, …)")
    fields: str | None = option(None, metavar="OURS=THEIRS,…",
                                help="with --data-file: field mapping, e.g. question=problem,answer=solution")
    limit: int | None = option(None, help="with --data-file: the first N problems")
    out: str | None = option(None, metavar="FILE.yaml", help="write the drafts to this file instead of stdout")
    force: bool = option(False, help="overwrite --out if it exists (it may hold edited templates)")

    def __post_init__(self) -> None:
        if (self.question is None) == (self.data_file is None):
            raise ConfigError(self, "question", "give exactly one of {question} (a problem) or {data_file} (a "
                              "file of problems)")
        if self.data_file is None and self.fields is not None:
            raise ConfigError(self, "fields", "only applies with {data_file}")
        if self.data_file is not None and self.answer is not None:
            raise ConfigError(self, "answer", "only applies with {question} (a file's answers are in the file)")
        if not str(self.id).strip():
            raise ConfigError(self, "id", "must not be empty")
        check_positive(self, "limit")
        if self.data_file is not None:
            self.data_spec()  # a bad dataset name or field mapping fails when built

    def data_spec(self) -> Any:
        """The :class:`~robusteval.data.spec.DataSpec` of ``data_file`` (problems with their answers)."""
        from robusteval.data.spec import DataSpec

        try:
            return DataSpec(self.dataset, self.data_file, limit=self.limit, fields=self.fields)
        except ConfigError as exc:
            raise ConfigError(self, exc.field if exc.field in ("dataset", "fields") else "data_file",
                              exc.problem) from None


@validated
@dataclass(frozen=True)
class CheckConfig(TemplateFiles):
    """``variants check``: validate's original-answer check plus the deep checks of template files."""

    # The same setting as TemplateFiles', given another way: the command takes the files as its arguments.
    templates: TemplatePaths = option(metavar="TEMPLATE_FILE", help=_TEMPLATES_HELP, cli=False)
    draws: int = option(1000, help="seeded draws per template (every combination when there are fewer)")
    n: int = option(5, help="instances per template, as `variants instantiate --n` would write")
    seed: int = option(DEFAULT_SEED, help="seed of the draws and of the instances checked")
    min_rate: float = option(0.05, help="warn when fewer draws than this share satisfy the constraints")
    json: str | None = option(None, metavar="FILE", help="also write every finding as JSON")

    def __post_init__(self) -> None:
        check_at_least(self, "draws", 1, optional=False)
        check_at_least(self, "n", 1, optional=False)
        if not (isinstance(self.min_rate, int | float) and 0 <= self.min_rate <= 1):
            raise ConfigError(self, "min_rate", f"must be within [0, 1], got {self.min_rate!r}")
