"""The VAR-MATH pipelines: instantiate, validate, evaluate_variants, score and import, each from a typed config.

``robusteval variants …`` parses its flags into these configs and calls these functions; a notebook does the
same without the command line::

    import robusteval as rv
    from robusteval import variants

    made = variants.instantiate(variants.InstantiateConfig("templates.yaml", n=5, out="instances.jsonl"))
    model = rv.load_model("hf:./my-model")
    summary = variants.evaluate_variants(variants.VariantsEvalConfig("instances.jsonl"), model, "runs/var")
    scores, graded = variants.score("instances.jsonl", "predictions.jsonl")

(:func:`evaluate_variants` is VAR-MATH's strict/loose scoring of sampled answers; ``rv.evaluate`` is
answer-first accuracy on a dataset.) Nothing here imports torch: only :func:`evaluate_variants` needs a model,
and it is handed one.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from robusteval.errors import UserError
from robusteval.lifecycle import public_entry
from robusteval.models import Backend, GenerationRequest
from robusteval.models.identity import backend_identity, backend_key
from robusteval.models.thinking import generate_thinking
from robusteval.prompts.answer_first import STOP_STRINGS
from robusteval.prompts.chat import conversation
from robusteval.runner import run_units
from robusteval.seeding import DEFAULT_SEED, derive_seed
from robusteval.store import RunStore, file_sha256, unit_key, write_jsonl_atomic, write_text_atomic
from robusteval.store.stages import register_stage
from robusteval.text.thinking import (
    NO_THINKING,
    ReasoningFormat,
    ReasoningOptions,
    no_reply_summary,
    opens_thinking,
    read_reply,
    summary_format,
    truncation_summary,
)
from robusteval.variants.checks import Check, validate_templates
from robusteval.variants.configs import (
    GradingConfig,
    ImportConfig,
    InstantiateConfig,
    ScoreConfig,
    TemplatePaths,
    ValidateConfig,
    VariantsEvalConfig,
)
from robusteval.variants.grading import VariantInstance, grade_all, load_instances, load_predictions
from robusteval.variants.sampler import CompatGenerator, Instance, json_answer
from robusteval.variants.sampler import instantiate as sample_templates
from robusteval.variants.template import LoadResult, Template, TemplateError, load_templates, split_paths

COMMAND = "variants eval"
STAGE = register_stage("variants_generation", summary="generations for VAR-MATH instances")
# The usual math-eval instruction (Qwen2.5-Math, VAR-MATH): reason, then box the final answer.
MATH_PROMPT = "{question}\n\nPlease reason step by step, and put your final answer within \\boxed{{}}."


def template_paths(templates: TemplatePaths) -> list[str]:
    """The template files, in order, from ``"a.yaml,b.csv"`` or a sequence of paths."""
    if isinstance(templates, str):
        return split_paths(templates)
    if isinstance(templates, os.PathLike):
        return [os.fspath(templates)]
    paths = [os.fspath(p) for p in templates]
    if not paths:
        raise UserError("templates: no file given")
    return paths


def _load(templates: TemplatePaths, prefix_ids: bool) -> tuple[list[tuple[str, LoadResult]], list[str]]:
    loaded = load_templates(template_paths(templates), prefix_ids=prefix_ids)
    return loaded, [warning for _, result in loaded for warning in result.warnings]


# ----------------------------------------------------------------------------------------------- instantiate
@dataclass
class InstantiateResult:
    instances: list[Instance]  # every instance, template files and templates in the order given
    by_file: list[tuple[str, list[Instance]]]  # the same, per template file
    problems: list[TemplateError]  # templates skipped: they did not load or could not be sampled
    warnings: list[str]
    n_templates: int  # templates that gave instances
    seed: int  # the seed used (``config.seed`` or the mode's default)
    compat: str | None
    written: list[Path] = dataclasses.field(default_factory=list)
    #: The templates' original problems (``config.originals``): one instance per template whose original
    #: values check (:func:`~robusteval.variants.checks.original_instance`), its id the template's.
    originals: list[Instance] = dataclasses.field(default_factory=list)
    #: Templates with no original problem written, and why (their original values are missing or do not
    #: reproduce the original answer).
    no_original: list[str] = dataclasses.field(default_factory=list)

    def rows(self, instances: Sequence[Instance] | None = None) -> list[dict[str, Any]]:
        """Instances as the JSONL files hold them (compat mode: only id, question and answer)."""
        chosen = self.instances if instances is None else instances
        return [i.to_json(compat=bool(self.compat)) for i in chosen]


def _write_instances(path: Path, rows: list[dict[str, Any]], *, ascii_only: bool) -> None:
    # Compat output uses json.dumps defaults, like the original generator, so files match byte for byte.
    write_jsonl_atomic(path, rows, ensure_ascii=ascii_only)


@public_entry
def instantiate(config: InstantiateConfig) -> InstantiateResult:
    """Sample every template; a template that fails is reported in ``problems`` and the rest still run.

    Writes ``config.out`` (all instances) and/or one ``<file stem>.jsonl`` per template file under
    ``config.out_dir`` when they are set, and ``config.originals`` (the original problems, :func:`originals_of`).
    """
    config.check()
    loaded, warnings = _load(config.templates, config.prefix_ids)
    seed = config.resolved_seed
    generator = CompatGenerator(seed) if config.compat else None  # one stream across all files
    result = InstantiateResult([], [], [], warnings, 0, seed, config.compat)
    for path, templates in loaded:
        result.problems += templates.problems
        instances, problems, sample_warnings = sample_templates(
            templates.templates,
            config.n,
            seed,
            compat=config.compat,
            exclude_original=config.exclude_original,
            generator=generator,
        )
        result.problems += problems
        result.warnings += sample_warnings
        result.n_templates += len(templates.templates) - len(problems)
        result.instances += instances
        result.by_file.append((path, instances))
    ascii_only = bool(config.compat)
    if config.out:
        _write_instances(Path(config.out), result.rows(), ascii_only=ascii_only)
        result.written.append(Path(config.out))
    if config.out_dir:
        for path, instances in result.by_file:
            target = Path(config.out_dir) / (Path(path).stem + ".jsonl")
            _write_instances(target, result.rows(instances), ascii_only=ascii_only)
            result.written.append(target)
    if config.originals:
        result.originals, result.no_original = originals_of(
            [template for _, templates in loaded for template in templates.templates])
        _write_instances(Path(config.originals), result.rows(result.originals), ascii_only=ascii_only)
        result.written.append(Path(config.originals))
    return result


def originals_of(templates: Sequence[Template]) -> tuple[list[Instance], list[str]]:
    """The original problems of ``templates`` (each at its original values, id = the template id: what
    ``variants eval --originals`` asks), and one line per template left out: its original values are missing,
    break its constraints or do not give its original answer (``variants validate`` says the same)."""
    from robusteval.variants.checks import check_template, original_instance

    found: list[Instance] = []
    left_out: list[str] = []
    for template in templates:
        instance = original_instance(template)
        if instance is None:
            check = check_template(template)
            where = f"{template.source}: " if template.source else ""
            left_out.append(f"{where}template '{template.id}': no original problem written ({check.status}: "
                            f"{check.message})")
        else:
            found.append(instance)
    return found, left_out


# ----------------------------------------------------------------------------------------------- validate
STATUSES = ("ok", "mismatch", "error", "unchecked")


@dataclass
class ValidationReport:
    checks: list[Check]  # one per template, including those that did not load (status "error")
    warnings: list[str]
    written: Path | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {s: sum(1 for c in self.checks if c.status == s) for s in STATUSES}

    @property
    def failed(self) -> bool:
        """Some template does not reproduce its answer, does not load or cannot be evaluated."""
        counts = self.counts
        return bool(counts["mismatch"] or counts["error"])

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts, "templates": [c.to_json() for c in self.checks]}


@public_entry
def validate(config: ValidateConfig) -> ValidationReport:
    """Evaluate every template at its original values; writes ``config.json`` when set."""
    loaded, warnings = _load(config.templates, config.prefix_ids)
    checks: list[Check] = []
    for _, result in loaded:
        checks += validate_templates(result.templates, result.problems)
    report = ValidationReport(checks, warnings)
    if config.json:
        report.written = Path(config.json)
        text = json.dumps(report.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"
        write_text_atomic(report.written, text)
    return report


# ----------------------------------------------------------------------------------------------- grading
class VariantScores(TypedDict):
    strict: float | None
    loose: float | None
    instance_accuracy: float | None
    n_problems: int
    n_instances: int
    n_samples: int
    strict_ci95: list[float] | None
    loose_ci95: list[float] | None
    bootstrap: dict[str, Any] | None
    problems: list[dict[str, Any]]
    n_predictions: int
    n_missing: int


InstancesLike = str | os.PathLike[str] | Sequence[VariantInstance | Instance]
PredictionsLike = str | os.PathLike[str] | Mapping[str, Sequence[str]]


def _variant_instances(instances: InstancesLike) -> list[VariantInstance]:
    if isinstance(instances, str | os.PathLike):
        return load_instances(instances)
    return [
        i if isinstance(i, VariantInstance) else VariantInstance(i.id, i.question, json_answer(i.answer))
        for i in instances
    ]


@public_entry
def score(
    instances: InstancesLike,
    predictions: PredictionsLike,
    grading: GradingConfig | None = None,
) -> tuple[VariantScores, list[dict[str, Any]]]:
    """Strict/loose scores (with bootstrap CIs) and one graded row per prediction.

    ``instances``: an instances JSONL or the instances themselves (from :func:`instantiate` or
    :func:`~robusteval.variants.grading.load_instances`); ``predictions``: a predictions JSONL
    (``{"id", "prediction"}`` per line; ids not among the instances are ignored) or ``{id: [sample, …]}``.
    """
    grading = grading or GradingConfig()
    grading.check()
    rows = _variant_instances(instances)
    if isinstance(predictions, str | os.PathLike):
        predictions, _ = load_predictions(predictions, {i.id for i in rows})
    by_id = {iid: list(texts) for iid, texts in predictions.items()}
    summary, graded = grade_all(rows, by_id, **grading.kwargs())
    return summary, graded  # type: ignore[return-value]


@dataclass(frozen=True)
class ScoreReport:
    summary: dict[str, Any]  # as written: the files, the scores, the seeds and every graded prediction
    unknown_ids: list[str]  # prediction ids that are not in the instances file (ignored)
    path: Path


@public_entry
def score_files(config: ScoreConfig) -> ScoreReport:
    """Grade ``config.predictions`` against ``config.instances``; write the scores to ``config.out_path``."""
    config.grading.check()
    instances = load_instances(config.instances)
    predictions, unknown = load_predictions(config.predictions, {i.id for i in instances})
    scores, graded = score(instances, predictions, config.grading)
    summary = {
        "instances": str(config.instances),
        "predictions": str(config.predictions),
        **scores,
        "grading": dataclasses.asdict(config.grading),  # the grader among them: each row names who decided
        "seeds": {"bootstrap_seed": config.grading.bootstrap_seed},
        "graded": graded,
    }
    path = config.out_path
    write_text_atomic(path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return ScoreReport(summary, unknown, path)


# ----------------------------------------------------------------------------------------------- evaluate
class VariantsEvalSummary(VariantScores):
    model: str
    instances: str
    temperature: float
    top_p: float
    max_new_tokens: int
    stop: list[str]
    grading: dict[str, Any]
    diagnosis: dict[str, Any]
    model_identity: dict[str, Any] | None
    seeds: dict[str, int]
    environment: dict[str, Any] | None
    # A thinking model's run says how its traces were read and how many the budget cut; any run, how many replies
    # were empty (text.thinking): those generations are graded wrong and counted, with their intervals.
    reasoning_format: NotRequired[dict[str, Any]]
    thinking_truncated: NotRequired[dict[str, Any]]
    thinking_forced: NotRequired[dict[str, Any]]
    no_reply: NotRequired[dict[str, Any]]


def sample_seed(seed: int, k: int) -> int:
    """The seed of sample ``k`` of every instance (distinct, reproducible samples)."""
    return derive_seed(seed, "variants-sample", k)


def variants_eval_identity(config: VariantsEvalConfig, model: dict[str, Any] | None) -> dict[str, Any]:
    """What a ``variants eval`` run directory holds: the model, the instances' content and the sampling."""
    from robusteval.lifecycle import run_identity

    temperature, top_p = config.sampling()
    return run_identity(COMMAND, config, model, instances=str(config.instances),
                        instances_sha256=file_sha256(config.instances), temperature=temperature, top_p=top_p,
                        prompt_hash=unit_key(MATH_PROMPT))


def stop_strings(reasoning: ReasoningFormat, options: ReasoningOptions | None = None) -> tuple[str, ...]:
    """Where a generation stops: before a next question the model starts inventing (``\nQ:``, as ``eval``
    stops), so the answer is never read from a made-up follow-on "Q: ... A: The answer is 6". Not where the
    trace of a thinking model is in the same generation (a trace may hold such a line; budget forcing
    generates the reply apart, and the stops then apply to the reply only)."""
    split = options is not None and options.max_thinking_tokens is not None and reasoning.kind == "think-tags"
    return STOP_STRINGS if not reasoning.thinks or split else ()


def generate_all(
    backend: Backend,
    store: RunStore,
    instances: Sequence[VariantInstance],
    *,
    samples: int = 1,
    temperature: float = 0.0,
    top_p: float = 1.0,
    max_new_tokens: int = 2048,
    seed: int = DEFAULT_SEED,
    chat: bool = False,
    batch_size: int = 8,
    prompt_template: str = MATH_PROMPT,
    system_prompt: str | None = None,
    reasoning: ReasoningFormat = NO_THINKING,
    options: ReasoningOptions | None = None,
) -> list[dict[str, Any]]:
    """One stored generation per (instance, sample): a killed run resumes where it stopped. ``reasoning``: how a
    thinking model's generations hold their trace; each record then keeps ``thinking`` and ``reply`` (the text
    graded; empty for a trace never closed, which is graded wrong).

    ``chat``: the prompt is one user turn (after a ``system_prompt`` turn when given), rendered by the model's chat
    template (hf) or sent to /chat/completions (openai); the conversation is part of every unit's key.
    """
    units = [(inst, k) for inst in instances for k in range(samples)]
    model_key = backend_key(backend)
    stops = stop_strings(reasoning, options)

    def request(inst: VariantInstance, k: int) -> GenerationRequest:
        text = prompt_template.format(question=inst.question)
        return GenerationRequest(
            "" if chat else text,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            stop=stops,
            seed=sample_seed(seed, k),
            chat=chat,
            messages=tuple(conversation(text, system=system_prompt)) if chat else (),
        )

    def key_of(unit: tuple[VariantInstance, int]) -> str:
        inst, k = unit
        return unit_key(STAGE, model_key, inst.id, k, request(inst, k).key())

    def compute(batch: list[tuple[VariantInstance, int]]) -> list[dict[str, Any]]:
        requests = [request(inst, k) for inst, k in batch]
        opened = [opens_thinking(backend, r.messages, reasoning) for r in requests]
        outputs = generate_thinking(backend, requests, reasoning, options or ReasoningOptions(), opened)
        records = []
        for (inst, k), out, opens in zip(batch, outputs, opened, strict=True):
            record = {"id": inst.id, "sample": k, "question": inst.question, "gold": inst.gold,
                      "completion": out.text, "finish_reason": out.finish_reason, "n_tokens": out.n_tokens}
            # A trace never closed, or an empty reply: graded wrong (its prediction is empty) and counted by reason.
            record.update(read_reply(out.text, out.meta, out.finish_reason, reasoning, opened=opens)[1])
            records.append(record)
        return records

    return run_units(
        store,
        STAGE,
        units,
        key_of,
        compute,
        id_of=lambda unit: unit[0].id,
        batch_size=batch_size,
        description=COMMAND,
    )


def predictions_from_records(records: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """``{id: [prediction of sample 0, 1, …]}`` from stored generation records: the reply of a thinking model's
    generation (empty when its trace was never closed), else the whole completion."""
    out: dict[str, list[str]] = {}
    for record in sorted(records, key=lambda r: (r["id"], r["sample"])):
        out.setdefault(record["id"], []).append(record["reply"] if "reply" in record else record["completion"])
    return out


@public_entry
def evaluate_variants(
    config: VariantsEvalConfig,
    backend: Backend,
    store: RunStore | str | os.PathLike[str],
    *,
    batch_size: int = 8,
) -> VariantsEvalSummary:
    """Ask ``backend`` every instance K times, grade, and write the summary, ``predictions.jsonl`` and
    ``graded.jsonl`` into the run directory.

    ``store`` is an open :class:`RunStore` or a run directory (opened, locked and checked here). Every
    generation is a stored unit, so the same call on the same directory resumes.

    The summary's ``diagnosis`` (:mod:`robusteval.metrics.varmath_diagnosis`) compares each problem's variants
    with its original: ``config.originals`` is asked now, with the same model and settings, into
    ``<run dir>/original``; ``config.original_run`` is read (checked before any generation); without either,
    problems are categorised by their variants only.
    """
    from robusteval.lifecycle import finish, store_for

    config.check()
    instances = config.load_instances()
    temperature, top_p = config.sampling()
    identity = variants_eval_identity(config, backend_identity(backend))
    given = check_originals(config, identity.get("model"))  # a bad original run fails before any generation
    reasoning = config.thinking.resolve(backend)
    with store_for(store, identity, {"limit": config.limit, "batch_size": batch_size}) as run:
        records = generate_all(
            backend,
            run,
            instances,
            samples=config.samples,
            temperature=temperature,
            top_p=top_p,
            max_new_tokens=config.generation.budget(),
            seed=config.seed,
            chat=config.chat,
            batch_size=batch_size,
            system_prompt=config.system_prompt,
            reasoning=reasoning,
            options=config.thinking,
        )
        predictions = predictions_from_records(records)
        scores, graded = score(instances, predictions, config.grading)
        write_jsonl_atomic(
            run.run_dir / "predictions.jsonl",
            [{"id": r["id"], "sample": r["sample"], "prediction": predictions[r["id"]][r["sample"]]}
             for r in records],
        )
        write_jsonl_atomic(run.run_dir / "graded.jsonl", graded)
        originals, source = _originals(config, given, backend, run.run_dir, batch_size)
        summary = {
            "model": backend.name,
            **summary_format(reasoning, records),
            **truncation_summary(records),
            **no_reply_summary(records),
            "instances": str(config.instances),
            "temperature": temperature,
            "top_p": top_p,
            "max_new_tokens": config.max_new_tokens,
            "stop": list(stop_strings(reasoning, config.thinking)),
            **scores,
            "grading": dataclasses.asdict(config.grading),
            "diagnosis": {**diagnose_scores(scores, originals, config.grading), "original_run": source},
        }
        seeds = {"seed": config.seed, "bootstrap_seed": config.grading.bootstrap_seed}
        return finish(run, summary, seeds=seeds, shape=VariantsEvalSummary)


# ----------------------------------------------------------------------------------------------- diagnosis
#: Where ``variants eval --originals`` puts the run on the original problems, inside the variants run directory.
ORIGINAL_DIR = "original"


def diagnose_scores(scores: Mapping[str, Any], originals: Mapping[str, float] | None,
                    grading: GradingConfig | None = None) -> dict[str, Any]:
    """:func:`robusteval.metrics.varmath_diagnosis.diagnose` of scored variants, bootstrapped with the grading
    config's rounds and seed (the same seeds as strict's and loose's intervals)."""
    from robusteval.metrics.varmath_diagnosis import diagnose

    grading = grading or GradingConfig()
    return diagnose(scores["problems"], originals, rounds=grading.bootstrap_rounds, seed=grading.bootstrap_seed)


def _same_model(mine: Mapping[str, Any] | None, theirs: Mapping[str, Any] | None) -> bool:
    """The same weights (fingerprints when both have one, else the same backend and source)."""
    if not isinstance(mine, Mapping) or not isinstance(theirs, Mapping):
        return True  # nothing recorded to compare
    if mine.get("weights_sha256") and theirs.get("weights_sha256"):
        return mine["weights_sha256"] == theirs["weights_sha256"]
    names = ("backend", "source", "model", "target")
    return all(mine.get(k) == theirs.get(k) for k in names if mine.get(k) is not None and theirs.get(k) is not None)


def original_accuracies(run_dir: str | os.PathLike[str], model: Mapping[str, Any] | None = None
                        ) -> dict[str, float]:
    """Problem id -> accuracy in an earlier ``variants eval`` run on the original problems (one instance per
    problem, whose id is the problem id). A UserError, before any model loads, when ``run_dir`` is not such a
    finished run, or (``model``: this run's model identity) is another model's."""
    from robusteval.metrics.varmath_diagnosis import is_original_problems, originals_from_problems
    from robusteval.runs import load_run

    run = load_run(run_dir)
    if run.command != COMMAND:
        raise UserError(f"original run {run_dir}: not a `{COMMAND}` run (its command is {run.command!r})")
    problems = (run.summary or {}).get("problems")
    if not run.summary or not problems:
        raise UserError(f"original run {run_dir}: unfinished (no summary with problems): run it to the end first")
    if not is_original_problems(problems):
        raise UserError(f"original run {run_dir}: not a run on the original problems (it must hold one instance per "
                        "problem whose id is the problem id, e.g. '2024-I-8', not '2024-I-8_0')")
    if not _same_model(model, run.identity.get("model")):
        theirs = run.identity.get("model") or {}
        raise UserError(f"original run {run_dir}: made with another model ({theirs.get('source') or theirs.get('model')}"
                        "); the diagnosis compares one model's originals and variants")
    return originals_from_problems(problems)


def check_originals_file(path: str | os.PathLike[str]) -> list[VariantInstance]:
    """The original problems of ``--originals``: an instances file whose every id is a problem id."""
    from robusteval.metrics.variants import problem_id

    rows = load_instances(path)
    for row in rows:
        if problem_id(row.id) != row.id:
            raise UserError(f"originals {path}: id {row.id!r} is a variant's (<problem>_<j>); the original problems "
                            "have the problem's own id")
    return rows


def check_originals(config: VariantsEvalConfig, model: Mapping[str, Any] | None) -> dict[str, float] | None:
    """What the diagnosis' originals need, checked before any generation: ``config.original_run``'s accuracies
    (returned), or ``config.originals`` a file of original problems (None, like no originals at all)."""
    if config.original_run:
        return original_accuracies(config.original_run, model)
    if config.originals:
        check_originals_file(config.originals)
    return None


def _originals(config: VariantsEvalConfig, given: dict[str, float] | None, backend: Backend, run_dir: Path,
               batch_size: int) -> tuple[dict[str, float] | None, str | None]:
    """The original accuracies for the diagnosis and the run they come from: ``config.original_run``'s
    (``given``), or ``config.originals`` asked now (same model and settings) in ``run_dir/original``."""
    if config.original_run:
        return given, str(config.original_run)
    if not config.originals:
        return None, None
    target = run_dir / ORIGINAL_DIR
    inner = dataclasses.replace(config, instances=config.originals, originals=None, limit=None)
    done = evaluate_variants(inner, backend, target, batch_size=batch_size)
    from robusteval.metrics.varmath_diagnosis import originals_from_problems

    return originals_from_problems(done["problems"]), str(target)


# ----------------------------------------------------------------------------------------------- import
@dataclass
class ImportReport:
    templates: list[dict[str, Any]]  # native templates that load without problems
    problems: list[TemplateError]  # rows that could not be translated or do not pass the native checks
    warnings: list[str]
    written: Path | None = None

    def to_data(self) -> dict[str, Any]:
        return {"version": 1, "templates": self.templates}


@public_entry
def import_templates(config: ImportConfig) -> ImportReport:
    """Translate the CSV's rows (their Python expressions are parsed and rewritten, never executed); writes
    ``config.out`` (YAML, or JSON for a ``.json`` name) when set."""
    from robusteval.variants.template import templates_from_data
    from robusteval.variants.varmath_csv import import_csv

    result = import_csv(config.templates)
    # Keep only what the native checker accepts, so the written file loads without surprises.
    checked = templates_from_data({"version": 1, "templates": result.templates}, str(config.templates))
    ok_ids = {t.id for t in checked.templates}
    keep = [t for t in result.templates if str(t["id"]) in ok_ids]
    report = ImportReport(keep, result.problems + checked.problems, list(result.warnings))
    if config.out:
        out = Path(config.out)
        if out.suffix.lower() == ".json":
            text = json.dumps(report.to_data(), indent=2, ensure_ascii=False) + "\n"
        else:
            from robusteval.variants.yaml_io import dump_yaml

            text = dump_yaml(report.to_data())
        write_text_atomic(out, text)
        report.written = out
    return report
