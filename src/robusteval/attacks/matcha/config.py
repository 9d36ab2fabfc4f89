"""MATCHA's configuration, light to import (no torch): the attack's hyper-parameters with the paper's
defaults per dataset, and the run config behind ``robusteval attack matcha`` and ``robusteval.attack_matcha``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.attacks.matcha.config_presets import (
    DATASET_DEFAULTS,
    FALLBACK_DEFAULTS,
    PRESET_NAMES,
    PRESETS,
    preset_help,
    preset_values,
    presets_setting,
)
from robusteval.attacks.matcha.settings import (  # noqa: F401 (the choices, importable from here as before)
    COUNTINGS,
    LIBRARY_DEFAULTS,
    MAX_REDRAWS,
    REPLACEMENT_GATES,
    REPLACEMENT_POSITIONS,
    SUCCESS_CHECKS,
    VARIANTS,
    MatchaSettings,
)
from robusteval.attacks.matcha.thinking import DEFAULT_REASONING_SOURCE
from robusteval.config import (
    CONFIG_KEY,
    MORE,
    WHEN_SET,
    ConfigError,
    check_at_least,
    check_positive,
    fill_unset,
    filled,
    nested,
    option,
    validated,
)
from robusteval.data.spec import DataSpec
from robusteval.evals.prompt_options import PromptFields, PromptOptions, prompt_block
from robusteval.judging import JUDGE_KEYS, JudgeFields, JudgeOptions, judge_block
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.text.thinking import DEFAULT_MAX_THINKING_TOKENS, ReasoningOptions

#: Unreadable LLM verdicts re-asked this many times under --count authors, at temperature 0 with the same prompt.
#: Their judge re-asks without limit (IRD 321-334: ``count`` is never incremented, so ``while count < 5`` never
#: ends on an unreadable reply); a bound is needed, and theirs for a failing request is 11 asks before their local
#: fallback (U 42-44: ``count > 10``), so 10 re-asks: 11 asks in all. On a deterministic backend (hf, a local
#: server at temperature 0) the same prompt gives the same reply, so the re-asks change nothing there, as in theirs.
AUTHORS_JUDGE_RETRIES = 10
#: Their re-asks' temperature (``args.temperature``, default 0; our own re-asks sample at 0.7).
AUTHORS_RETRY_TEMPERATURE = 0.0
#: The embedding attack's perturbed span: the question alone (ours), or (the authors', --count authors) everything
#: from the end of their tokenisation of "<exemplars>Q: " to the end of the prompt, the answer trigger included.
PGD_SPANS = ("question", "question+trigger")
#: What the embedding attack's eps is a fraction of: the largest |coordinate| of the prompt's input embeddings
#: (ours), or of the prompt's and the clean response's (the authors').
EPS_BASES = ("prompt", "prompt+response")

#: Reasoning judges that need no model (and see only numbers).
OFFLINE_JUDGES = ("arith", "grounding")


def drift_measure() -> str:
    """What ``--max-drift`` bounds in this environment (no model loads: only whether it is installed)."""
    from robusteval.analysis.drift import resolve_measure

    return resolve_measure("auto")


#: The default of ``max_attack_tokens``: the longest attacked sequence (prompt with insertions + completion) an
#: example may have. Each step's forward and backward pass grows with it (attention quadratically): a
#: 10,000-token question against a 64k-context model ran over 15 minutes per example (docs/matcha.md).
DEFAULT_ATTACK_TOKENS = 8192
#: The defaults of the settings a preset may set (filled when the config is built, after the preset's values).
MAX_NEW_TOKENS = 256
#: The skip reason of an example over that budget (one text, so ``skip_reasons`` counts it).
OVER_TOKEN_BUDGET = "attacked sequence over the token budget (max_attack_tokens)"

#: The hyper-parameters' record as run identities and unit keys hold it, in its order (``epsilon`` recorded as
#: ``eps_fraction``, its name when the record was made).
IDENTITY_RECORD = ("level", "variant", "insert_ratio", "topk_ratio", "eps_fraction", "step_fraction", "random_start",
                   "pgd_span", "eps_base", "steps", "n_candidates", "max_new_tokens", "target_answer", "seed",
                   "answer_loss", "max_redraws", "max_drift", "drift_measure", "success_check", "counting",
                   "replacement_gate", "replacement_positions", "reasoning_source", "max_thinking_tokens")


@validated
@dataclass(frozen=True)
class MatchaConfig(MatchaSettings, GenerationFields):
    """The hyper-parameters an attack runs with: :class:`MatchaSettings` resolved (each left unset filled with
    :data:`~robusteval.attacks.matcha.settings.LIBRARY_DEFAULTS`, :meth:`for_dataset`: the dataset's paper
    defaults first), the generation budget, a thinking target's trace budget, and what the resolution derives."""

    # Embedding level: what PGD perturbs (PGD_SPANS) and what eps is scaled by (EPS_BASES). None: the authors' at
    # the embedding level under --count authors (question + trigger, prompt + response: inference_emb_attack.py
    # L179-182, L263-272), ours otherwise (the question, the prompt).
    pgd_span: str | None = option(None, choices=PGD_SPANS)
    eps_base: str | None = option(None, choices=EPS_BASES)
    drift_measure: str | None = option(None, choices=("embedding", "char"))  # what max_drift bounds
    generation: GenerationOptions = generation_block("max_new_tokens", max_new_tokens=MAX_NEW_TOKENS)
    # A thinking target only (unset otherwise, and then not in the identity): the trace's budget, on top of
    # max_new_tokens (attacks/matcha/thinking.py).
    thinking: ReasoningOptions = nested(default_factory=ReasoningOptions)

    @classmethod
    def for_dataset(cls, dataset: str, **overrides: Any) -> MatchaConfig:
        topk, eps = DATASET_DEFAULTS.get(dataset, FALLBACK_DEFAULTS)
        values: dict[str, Any] = {"topk_ratio": topk, "epsilon": eps}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def __post_init__(self) -> None:
        # frozen: resolved once, here
        for name, value in LIBRARY_DEFAULTS.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        authors = self.level == "embedding" and self.counting == "authors"
        for name, value in (("random_start", not authors), ("pgd_span", PGD_SPANS[authors]),
                            ("eps_base", EPS_BASES[authors])):
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        self.validate()

    def validate(self) -> None:
        """Refuse hyper-parameters that cannot run (checked when built; :class:`MatchaRunConfig` builds its
        resolved values here, so its refusals are these, named in its fields)."""
        self.check_values()
        if self.target_answer == "auto":
            raise ConfigError(self, "target_answer", "resolved hyper-parameters attack toward gold or clean")
        self.check_combination()
        if self.max_drift is not None and self.drift_measure is None:
            raise ConfigError(self, "drift_measure", "say what max_drift bounds: embedding or char")

    # Typed reads of the settings :class:`MatchaSettings` declares optional (unset in a run config), which a
    # MatchaConfig fills when built: a None here is a bug, refused by name.
    def real(self, name: str) -> float:
        return float(filled(self, name))

    def count(self, name: str) -> int:
        return int(filled(self, name))

    def choice(self, name: str) -> str:
        return str(filled(self, name))

    def record(self) -> dict[str, Any]:
        """Every hyper-parameter, flat, under its recorded name (:data:`IDENTITY_RECORD`): the summary's
        ``hyperparameters``."""
        values = {"eps_fraction": self.epsilon, "max_new_tokens": self.generation.budget(),
                  "max_thinking_tokens": self.thinking.max_thinking_tokens}
        return {name: values[name] if name in values else getattr(self, name) for name in IDENTITY_RECORD}

    def identity_record(self) -> dict[str, Any]:
        """The hyper-parameters as the run identity and unit keys record them (:data:`IDENTITY_RECORD`): every
        one, except a ``success_check`` left at ``final``, a ``counting``, ``pgd_span`` or ``eps_base`` left at
        ours, and the thinking fields of a target without thinking (runs made before the options existed keep
        their identity)."""
        record = self.record()
        if record["success_check"] == "final":
            del record["success_check"]
        if record["counting"] == "ours":
            del record["counting"]
        for name, ours in (("pgd_span", PGD_SPANS[0]), ("eps_base", EPS_BASES[0])):
            if record[name] == ours:
                del record[name]
        for name in ("reasoning_source", "max_thinking_tokens", "replacement_gate", "replacement_positions"):
            if record[name] is None:
                del record[name]
        return record


def is_paper_judge(atom: str) -> bool:
    """Whether a judge spec's atom is the authors' LLM judge, GPT-3.5-turbo through the OpenAI API (IRD 323)."""
    kind, _, rest = atom.strip().partition(":")
    return kind == "openai" and rest.partition("@")[0].startswith("gpt-3.5-turbo")


@validated
@dataclass(frozen=True)
class MatchaRunConfig(MatchaSettings, GenerationFields, JudgeFields, PromptFields):
    """One MATCHA attack run: data, judges, prompt and generation, and :class:`MatchaSettings` (attack level,
    variant, counting, hyper-parameters; None: the preset's, else the paper's default for the dataset, see
    :data:`robusteval.attacks.matcha.config_presets.DATASET_DEFAULTS`).

    ``preset`` (:mod:`robusteval.attacks.matcha.config_presets`) fills the settings left unset (None) when the
    config is built; what a preset filled is an ordinary setting from then on (the run identity records it)."""

    data: DataSpec = nested()
    judging: JudgeOptions = judge_block(*JUDGE_KEYS, judge="arith", semantic_judge="none")
    min_correct: int = option(4, cli=CONFIG_KEY, help="target-answer auto: fewest correct clean answers for the gold target")
    attack_limit: int | None = option(None, cli=MORE, help="attack at most the first N attackable examples", identity=False)
    max_attack_tokens: int | None = option(
        None, cli=CONFIG_KEY, metavar="N", identity=WHEN_SET,
        help="skip, with its reason, an example whose attacked sequence (the prompt with its insertions and the "
        "teacher-forced completion) is over N tokens: every step runs a forward and a backward pass over it "
        f"(default {DEFAULT_ATTACK_TOKENS:,}; 0: no limit, for a machine that can afford it)")
    thinking: ReasoningOptions = nested(default_factory=ReasoningOptions)
    # The attacked model's prompt shape and budget (max_new_tokens unset: the preset's, else MAX_NEW_TOKENS).
    generation: GenerationOptions = generation_block("chat", "system_prompt", "max_new_tokens")
    prompt: PromptOptions = prompt_block("exemplars")
    sample: int | None = option(None, cli=CONFIG_KEY, help="attack a seeded random sample of N examples (after --limit); "
                                "--preset paper samples 500 StrategyQA questions")
    # Not in the identity: the values it fills are (a preset run resumes under the same settings given one by one).
    preset: str = option("none", choices=PRESET_NAMES, identity=False,
                         help=preset_help() + "; every summary lists its deviations from the paper")

    def __post_init__(self) -> None:
        """Refuse values that cannot run, in the config's own words (the CLI re-words them with flags), before
        any model loads: judge specs are part of the run identity."""

        self.check_values()
        # frozen: the preset's values and the defaults of the settings a preset may set, filled once, here
        fill_unset(self, {"max_new_tokens": MAX_NEW_TOKENS, "max_redraws": MAX_REDRAWS, "random_start": True,
                          **preset_values(self.preset, self.data.dataset, self.level)})
        if self.reasoning_source is not None and self.thinking.reasoning == "none":
            raise ConfigError(self, "reasoning_source", "the target is read without a trace (reasoning none); "
                              "leave it unset")
        if self.thinking.reasoning == "harmony":
            raise ConfigError(self.thinking, "reasoning", "MATCHA attacks think-tag traces (harmony's channels are "
                              "special tokens the attack's text spans do not hold); use think-tags or none")
        check_positive(self, "sample")
        # attack_limit 0: the clean pass alone (a later run with a larger limit resumes it)
        for name, minimum in (("min_correct", 0), ("attack_limit", 0), ("max_attack_tokens", 0)):
            check_at_least(self, name, minimum)
        if self.resolved_counting() == "authors":
            # Their insertions land anywhere in the question and the answer trigger, their PGD perturbs both: a chat
            # template's markup there is not what they attacked, and the suffix baseline inserts nothing inside.
            if self.chat:
                raise ConfigError(self, "chat", "{counting=authors} perturbs the question and the answer trigger of "
                                  "a raw prompt, as the authors' code does; attack without {chat}")
            if self.variant == "gcg-suffix" and self.level == "token":
                raise ConfigError(self, "variant", "gcg-suffix appends a suffix; {counting=authors} inserts one token "
                                  "at a time inside the question (use another variant or {counting=ours})")
        if self.unreadable_verdicts == "authors-fallback" and self.resolved_counting() != "authors":
            raise ConfigError(self, "unreadable_verdicts", "authors-fallback counts what the authors' buggy fallback "
                              "reads; it is for {counting=authors} only (robusteval's counting abstains)")
        self._check_hyperparameters()

    def _check_hyperparameters(self) -> None:
        """The settings' combination checked once resolved, :meth:`MatchaConfig.validate` (one place), its refusals
        named as this config's fields."""
        try:
            self.hyperparameters()
        except ConfigError as exc:
            if exc.config_type is not MatchaConfig:
                raise
            raise ConfigError(self, exc.field, exc.problem) from None

    @staticmethod
    def presets_setting(name: str) -> list[str]:
        """The presets that set the field ``name`` (named by its deprecated flag's notice)."""
        return presets_setting(name)

    def resolved_judge_retries(self) -> int:
        """How often an unreadable LLM verdict is asked again before the example is counted apart."""
        if self.judge_retries is not None:
            return self.judge_retries
        return AUTHORS_JUDGE_RETRIES if self.resolved_counting() == "authors" else 0

    def resolved_retry_temperature(self) -> float | None:
        """The temperature of the re-asks: theirs (0) under --count authors, else None (the judge's own, 0.7)."""
        return AUTHORS_RETRY_TEMPERATURE if self.resolved_counting() == "authors" else None

    def resolved_unreadable(self) -> str:
        """What a verdict still unreadable after its re-asks counts as (:data:`robusteval.judging.UNREADABLE_VERDICTS`)."""
        return self.unreadable_verdicts or "abstain"

    def resolved_replacement_gate(self) -> str | None:
        """The replacement gate of --count authors at the token level (their code's unless corrected), else None."""
        if self.resolved_counting() != "authors" or self.level != "token":
            return None
        return self.replacement_gate or "authors"

    def resolved_replacement_positions(self) -> str | None:
        """The replacement positions of --count authors at the token level (their code's unless corrected), else
        None (robusteval's, not in the identity)."""
        if self.resolved_counting() != "authors" or self.level != "token":
            return None
        return self.replacement_positions or "authors"

    def hyperparameters(self, target_answer: str | None = None, *, thinks: bool = False) -> MatchaConfig:
        """The attack's resolved hyper-parameters (dataset defaults filled in); ``thinks``: the target writes a
        trace, so the reasoning source and the trace's budget are resolved too."""
        target = target_answer or ("gold" if self.target_answer == "auto" else self.target_answer)
        settings = {field.name: getattr(self, field.name) for field in dataclasses.fields(MatchaSettings)}
        resolved = {
            "target_answer": target,
            # The authors' PGD (--count authors) always starts at the clean input, as their code does.
            "random_start": None if self.resolved_counting() == "authors" else self.random_start,
            "replacement_gate": self.replacement_gate or self.resolved_replacement_gate(),  # set: MatchaConfig checks it
            "replacement_positions": self.replacement_positions or self.resolved_replacement_positions(),
            "reasoning_source": (self.reasoning_source or DEFAULT_REASONING_SOURCE) if thinks else None}
        return MatchaConfig.for_dataset(
            self.data.dataset, **{**settings, **resolved},
            # Resolved here, so the run identity records the measure and an environment that lost the
            # embedding model cannot resume a run that bounded the cosine.
            drift_measure=drift_measure() if self.max_drift is not None else None,
            generation=GenerationOptions(max_new_tokens=self.max_new_tokens),
            thinking=ReasoningOptions(max_thinking_tokens=self.thinking_budget() if thinks else None),
        )

    def thinking_budget(self) -> int | None:
        """A thinking target's trace budget, on top of ``max_new_tokens``: ``--max-thinking-tokens``, else
        :data:`DEFAULT_MAX_THINKING_TOKENS` through the chat template (which opens traces), else none: the paper's
        raw few-shot prompt keeps its budget (a completion without think tags is read whole, as before)."""
        if self.thinking.max_thinking_tokens is not None:
            return self.thinking.max_thinking_tokens
        return DEFAULT_MAX_THINKING_TOKENS if self.chat else None

    def sample_size(self) -> int | None:
        """How many examples a run samples (``sample``: set, or the paper preset's 500 StrategyQA questions)."""
        return self.sample

    def check(self, answer_type: str) -> None:
        """Refuse settings that cannot build or cannot measure what the summary would claim (before any model
        loads or any run directory is made: judge specs are part of the run identity)."""
        from robusteval.judges.base import spec_atoms

        judges = spec_atoms(self.judging.reasoning_spec())
        if answer_type == "yesno" and all(atom.strip() in OFFLINE_JUDGES for atom in judges):
            raise ConfigError(self, "judge", f"{self.judge} cannot judge yes/no reasoning: the offline checkers only "
                              "find false equations and ungrounded quantities, so every SR would be 0 by "
                              "construction; give an LLM judge ({judge=hf:PATH} or {judge=openai:MODEL@URL}), alone "
                              "or as arith+MODEL")
        if self.preset != "paper":
            return
        problems = []
        if self.exemplars in (None, "math", "yesno"):
            problems.append("{exemplars=FILE} (the paper uses Wei et al.'s exemplars; robusteval's built-in sets are "
                            "its own)")
        # The authors OR the arithmetic check into their LLM judge (it is part of --count authors either way);
        # the grounding checker is robusteval's own.
        if all(atom.strip() in (*OFFLINE_JUDGES, "none") for atom in judges) or any(
                atom.strip() in ("grounding", "none") for atom in judges):
            problems.append("{judge=MODEL-SPEC} or {judge=arith+MODEL-SPEC} (the paper's reasoning judge is an LLM, "
                            "with the arithmetic check OR-ed in)")
        if self.judging.semantic_spec().strip() == "none":
            problems.append("{semantic_judge=MODEL-SPEC} (the paper gates every perturbation)")
        if problems:
            raise ConfigError(self, "preset", "paper needs " + "; ".join(problems))

    def deviations(self, answer_type: str) -> list[str]:
        """How this run departs from the paper's algorithm and settings (listed in every summary)."""
        hyper = self.hyperparameters()
        topk, eps = DATASET_DEFAULTS.get(self.data.dataset, FALLBACK_DEFAULTS)
        out = []
        if hyper.count("n_candidates") > 1:
            out.append(f"{hyper.n_candidates} replacement candidates re-scored by the true loss per position "
                       "(the paper takes the gradient pick; GCG-like)")
        if hyper.answer_loss == "answer":
            out.append("L_a averaged over the answer-token positions, not over the n3 positions")
        if self.exemplars in (None, "math", "yesno"):
            out.append("robusteval's own exemplars, not Wei et al.'s")
        from robusteval.judges.base import spec_atoms

        atoms = set(spec_atoms(self.judging.reasoning_spec()))
        authors = hyper.counting == "authors"
        if not authors:
            out.append("outcomes counted by robusteval's rules (the reasoning judge alone, over attacked examples "
                       "whose clean reasoning is sound), not the authors' (--count authors)")
        if atoms <= {"arith"}:
            out.append("reasoning judged by the arithmetic checker alone (false equations only), no LLM judge")
        elif "arith" in atoms and not authors:
            out.append("reasoning judged by the arithmetic checker (false equations only), not only an LLM judge")
        if atoms - {"arith", "grounding"} and self.judge_prompt is None:
            out.append("the reasoning LLM judge asks robusteval's own prompt, not the authors' criteria prompt "
                       "(--judge-prompt FILE, docs/matcha.md)")
        if self.judge_prompt is not None:
            out.append(f"the reasoning LLM judge asks the prompt of --judge-prompt {Path(self.judge_prompt).name}, "
                       "which robusteval cannot tell to be the authors' criteria prompt")
        others = sorted(a for a in atoms - {"arith", "grounding", "none"} if not is_paper_judge(a))
        if others:
            out.append(f"reasoning judged by {', '.join(others)}, not GPT-3.5-turbo (the authors' judge)")
        if "grounding" in atoms:
            out.append("reasoning judged by the grounding checker (quantities not from the question), not only an "
                       "LLM judge")
        if self.judging.semantic_spec().strip() == "none":
            out.append("no semantic judge gates the perturbations")
        if hyper.target_answer == "clean" or self.target_answer == "auto":
            out.append("target answer may be the model's own clean answer, not the gold one")
        if self.data.dataset not in DATASET_DEFAULTS:
            out.append(f"dataset '{self.data.dataset}' has no paper defaults; k={topk}, eps={eps} used")
        # The paper's values: the paper preset's (one source), its k and eps for this dataset.
        paper = {name: PRESETS["paper"]["values"][name] for name in ("insert_ratio", "steps", "max_new_tokens")}
        paper.update(topk_ratio=topk, epsilon=eps)
        for name, value in paper.items():
            if getattr(hyper, name) != value:
                out.append(f"{name} = {getattr(hyper, name)} (paper: {value})")
        if self.chat:
            out.append("prompted through the chat template (the paper prompts the raw model)")
        if hyper.level == "embedding" and hyper.random_start:
            out.append("PGD starts from a random point in the eps-ball (the authors' code starts at the clean input: "
                       "--count authors)")
        if hyper.level == "embedding" and hyper.pgd_span == "question":
            out.append("PGD perturbs the question only, eps scaled over the prompt's embeddings (the authors' code: "
                       "question + answer trigger, eps over prompt + response: --count authors)")
        if hyper.max_drift is not None:
            out.append(f"perturbations bounded by --max-drift {hyper.max_drift} ({hyper.drift_measure} measure)")
        if authors:
            retries = self.resolved_judge_retries()
            read = ("counted apart as unjudged" if self.resolved_unreadable() == "abstain" else
                    "read as 'correct', as the authors' local fallback reads every verdict")
            out.append(f"an LLM verdict still unreadable after {retries} re-asks at temperature 0 is {read} (the "
                       "authors' judge re-asks without limit)")
        if hyper.replacement_gate == "authors":
            out.append("replacements gated as the authors' code gates them: the semantic judge compares two "
                       "identical strings and never sees the replacement (the paper gates every perturbation)")
        elif hyper.replacement_gate == "corrected":
            out.append("replacements gated against the question before the step (corrected: the authors' code "
                       "compares two identical strings)")
        if hyper.replacement_positions == "authors":
            out.append("replaced positions chosen as the authors' code chooses them: their gather reads row i of the "
                       "gradient (the i-th prompt token) at the vocabulary id equal to the i-th inserted location, "
                       "and int(k x inserted) are replaced (the paper: the top-k inserted positions by gradient)")
        elif hyper.replacement_positions == "corrected":
            out.append("replaced positions ranked by the gradient at each inserted position's current token, "
                       "ceil(k x inserted) of them (corrected: the authors' code gathers by position)")
        if hyper.level == "token" and hyper.variant != "random-insert" and hyper.success_check == "final":
            out.append("success judged only after the last step (the authors' implementation, behind the published "
                       "tables, also judges right after the insertions: --success-check insertion-and-final)")
        return out


