"""MATCHA's configuration, light to import (no torch): the attack's hyper-parameters with the paper's
defaults per dataset, and the run config behind ``robusteval attack matcha`` and ``robusteval.attack_matcha``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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
from robusteval.attacks.matcha.thinking import DEFAULT_REASONING_SOURCE, REASONING_SOURCES
from robusteval.config import (
    CONFIG_KEY,
    MORE,
    WHEN_SET,
    ConfigError,
    check_at_least,
    check_choice,
    check_choices,
    check_positive,
    fill_unset,
    nested,
    option,
    validated,
)
from robusteval.data.spec import DataSpec
from robusteval.evals.prompt_options import PromptFields, PromptOptions, prompt_block
from robusteval.judging import JUDGE_KEYS, JudgeFields, JudgeOptions, judge_block
from robusteval.models.generation import GenerationFields, GenerationOptions, generation_block
from robusteval.seeding import DEFAULT_SEED
from robusteval.text.thinking import DEFAULT_MAX_THINKING_TOKENS, ReasoningOptions

VARIANTS = ("full", "random-insert", "random-locs", "cot-loss-only", "gcg-suffix")
#: When the token level generates and judges (see attacks/matcha/token.py): once after the last step (the
#: paper's text), or also right after the insertions (the authors' implementation, the published tables).
SUCCESS_CHECKS = ("final", "insertion-and-final")
#: How outcomes are counted (docs/matcha.md, "Counting"): robusteval's rules ("ours": the reasoning judge's verdict
#: alone, over the attacked examples whose clean reasoning is sound) or the MATCHA authors' code step by step
#: ("authors": kept answer AND (LLM judge 0 OR a false equation OR empty reasoning), their insertion procedure,
#: over every question answered correctly before perturbation).
COUNTINGS = ("ours", "authors")
#: Unreadable LLM verdicts re-asked this many times under --count authors, at temperature 0 with the same prompt.
#: Their judge re-asks without limit (IRD 321-334: ``count`` is never incremented, so ``while count < 5`` never
#: ends on an unreadable reply); a bound is needed, and theirs for a failing request is 11 asks before their local
#: fallback (U 42-44: ``count > 10``), so 10 re-asks: 11 asks in all. On a deterministic backend (hf, a local
#: server at temperature 0) the same prompt gives the same reply, so the re-asks change nothing there, as in theirs.
AUTHORS_JUDGE_RETRIES = 10
#: Their re-asks' temperature (``args.temperature``, default 0; our own re-asks sample at 0.7).
AUTHORS_RETRY_TEMPERATURE = 0.0
#: What a verdict still unreadable after the re-asks counts as (robusteval.judging.UNREADABLE_VERDICTS): "abstain"
#: (the example is counted apart, robusteval's default under both countings) or "authors-fallback" (--count authors
#: only): "correct", as their local fallback reads every verdict (U 42-44, IRD 273-302: the first "Rating: " of the
#: decoded prompt is the criteria prompt's worked example's "Rating: 1").
#: How a replacement is gated under --count authors at the token level: "authors", as their code does (IRD 612,
#: 628-630: the judge is asked about two identical strings, the span before the step, so it never sees the
#: replacement and accepts what it accepts of an unchanged question); "corrected": the span before the step against
#: the span with the replacement. Outside --count authors every replacement is gated against the original question.
REPLACEMENT_GATES = ("authors", "corrected")
#: Which inserted positions a step replaces under --count authors at the token level: "authors", as their code
#: does (IRD 615-625: ``torch.gather(-grad, 1, locations)`` reads row i of the one-hot gradient, the i-th token of
#: the whole input from the BOS, at the vocabulary id equal to the i-th inserted location, and keeps
#: ``int(len x k)``, at least 1); "corrected": robusteval's, the inserted positions ranked by the gradient at their
#: current token, ``ceil(len x k)`` of them (also the choice outside --count authors).
REPLACEMENT_POSITIONS = ("authors", "corrected")
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
MAX_REDRAWS = 5
#: The skip reason of an example over that budget (one text, so ``skip_reasons`` counts it).
OVER_TOKEN_BUDGET = "attacked sequence over the token budget (max_attack_tokens)"

@validated
@dataclass(frozen=True)
class MatchaConfig:
    level: str = "token"  # token | embedding
    variant: str = "full"
    insert_ratio: float = 0.2
    topk_ratio: float = 0.25
    eps_fraction: float = 0.005
    step_fraction: float = 0.25
    # Embedding level: whether PGD starts from a random point in the eps-ball, what it perturbs (PGD_SPANS) and
    # what eps is scaled by (EPS_BASES). None: the authors' at the embedding level under --count authors (from the
    # clean input, question + trigger, prompt + response: inference_emb_attack.py L276, L179-182 and L367,
    # L263-272), ours otherwise (random, the question, the prompt).
    random_start: bool | None = None
    pgd_span: str | None = None
    eps_base: str | None = None
    steps: int = 5
    n_candidates: int = 1  # the paper's pure gradient pick; more re-scores candidates by the true loss
    max_new_tokens: int = MAX_NEW_TOKENS
    target_answer: str = "gold"  # gold | clean
    seed: int = 0
    answer_loss: str = "answer"  # L_a averaged over the answer positions ("answer") or over n3 ("n3", paper)
    max_redraws: int = MAX_REDRAWS  # insertions the semantic judge rejects are drawn again this many times
    max_drift: float | None = None  # token level: candidates drifting further are rejected before the judge
    drift_measure: str | None = None  # what max_drift bounds: "embedding" (1 - cosine) or "char" (edit ratio)
    success_check: str = "final"  # token level: "final" or "insertion-and-final" (SUCCESS_CHECKS)
    counting: str = "ours"  # COUNTINGS: the success rule, denominators and (token level) insertion procedure
    # --count authors at the token level only (None otherwise, and then not in the identity): how replacements are
    # gated (authors.REPLACEMENT_GATES: their code as it is, or corrected)
    replacement_gate: str | None = None
    # --count authors at the token level only (None otherwise, and then not in the identity): which inserted
    # positions a step replaces (REPLACEMENT_POSITIONS: their gather by position, or corrected)
    replacement_positions: str | None = None
    # A thinking target only (None otherwise, and then not in the identity): the reasoning attacked and judged
    # (REASONING_SOURCES) and the trace's budget, on top of max_new_tokens (attacks/matcha/thinking.py).
    reasoning_source: str | None = None
    max_thinking_tokens: int | None = None

    @classmethod
    def for_dataset(cls, dataset: str, **overrides: Any) -> MatchaConfig:
        topk, eps = DATASET_DEFAULTS.get(dataset, FALLBACK_DEFAULTS)
        values: dict[str, Any] = {"topk_ratio": topk, "eps_fraction": eps}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def __post_init__(self) -> None:
        authors = self.level == "embedding" and self.counting == "authors"
        for name, value in (("random_start", not authors), ("pgd_span", PGD_SPANS[authors]),
                            ("eps_base", EPS_BASES[authors])):
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)  # frozen: resolved once, here
        self.validate()

    def validate(self) -> None:
        """Refuse hyper-parameters that cannot run (checked when built; :class:`MatchaRunConfig` checks the
        values it is given first, in its own field names)."""
        check_choice(self, "level", ("token", "embedding"))
        check_choice(self, "variant", VARIANTS)
        check_choice(self, "target_answer", ("gold", "clean"))
        check_choice(self, "answer_loss", ("answer", "n3"))
        check_choice(self, "success_check", SUCCESS_CHECKS)
        check_choice(self, "counting", COUNTINGS)
        if self.replacement_gate is not None:
            check_choice(self, "replacement_gate", REPLACEMENT_GATES)
            if self.counting != "authors" or self.level != "token":
                raise ConfigError(self, "replacement_gate", "chooses between the authors' replacement gate and its "
                                  "correction: {counting=authors} at {level=token} only")
        if self.replacement_positions is not None:
            check_choice(self, "replacement_positions", REPLACEMENT_POSITIONS)
            if self.counting != "authors" or self.level != "token":
                raise ConfigError(self, "replacement_positions", "chooses between the authors' replacement positions "
                                  "and their correction: {counting=authors} at {level=token} only")
        check_choice(self, "pgd_span", PGD_SPANS)
        check_choice(self, "eps_base", EPS_BASES)
        if self.reasoning_source is not None:
            check_choice(self, "reasoning_source", REASONING_SOURCES)
        check_at_least(self, "max_thinking_tokens", 1)
        if self.level == "embedding" and self.variant not in ("full", "cot-loss-only"):
            raise ConfigError(self, "variant", f"{self.variant} is a token-level baseline; {{level=embedding}} takes "
                              "full or cot-loss-only")
        for name in ("insert_ratio", "topk_ratio", "eps_fraction", "step_fraction"):
            check_positive(self, name, optional=False)
        for name, minimum in (("steps", 0), ("n_candidates", 1), ("max_new_tokens", 1), ("max_redraws", 0)):
            check_at_least(self, name, minimum, optional=False)
        check_at_least(self, "max_drift", 0)
        if self.max_drift is not None and self.level == "embedding":
            raise ConfigError(self, "max_drift", "bounds the drift of perturbed question text; {level=embedding} "
                              "perturbs no text")
        if self.max_drift is not None:
            check_choice(self, "drift_measure", ("embedding", "char"))
            if self.drift_measure is None:
                raise ConfigError(self, "drift_measure", "say what max_drift bounds: embedding or char")
        if self.success_check != "final" and self.level == "embedding":
            raise ConfigError(self, "success_check", f"{self.success_check} is for the token level "
                              "({level=embedding} inserts nothing)")

    def identity_record(self) -> dict[str, Any]:
        """The hyper-parameters as the run identity and unit keys record them: every field, except a
        ``success_check`` left at ``final``, a ``counting``, ``pgd_span`` or ``eps_base`` left at ours, and the thinking fields of a target
        without thinking (runs made before the options existed keep their identity)."""
        record = asdict(self)
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


#: MatchaConfig's fields that MatchaRunConfig names otherwise (the flags' names).
RUN_FIELDS = {"eps_fraction": "epsilon"}


def is_paper_judge(atom: str) -> bool:
    """Whether a judge spec's atom is the authors' LLM judge, GPT-3.5-turbo through the OpenAI API (IRD 323)."""
    kind, _, rest = atom.strip().partition(":")
    return kind == "openai" and rest.partition("@")[0].startswith("gpt-3.5-turbo")


@validated
@dataclass(frozen=True)
class MatchaRunConfig(GenerationFields, JudgeFields, PromptFields):
    """One MATCHA attack run: data, attack level and variant, judges, hyper-parameters (None: the paper's
    default for the dataset, see :data:`robusteval.attacks.matcha.config_presets.DATASET_DEFAULTS`).

    ``preset`` (:mod:`robusteval.attacks.matcha.config_presets`) fills the settings left unset (None) when the
    config is built; what a preset filled is an ordinary setting from then on (the run identity records it)."""

    data: DataSpec = nested()
    level: str = option("token", choices=("token", "embedding"), help="token or embedding level")
    variant: str = option("full", choices=VARIANTS,
                          help="full, or a baseline: random-insert, random-locs, cot-loss-only, gcg-suffix")
    judging: JudgeOptions = judge_block(*JUDGE_KEYS, judge="arith", semantic_judge="none")
    replacement_gate: str | None = option(None, cli=CONFIG_KEY, choices=REPLACEMENT_GATES, metavar="authors|corrected",
                                          identity=WHEN_SET,
                                          help="--count authors, token level: how each replacement is gated: "
                                          "authors (their code: the semantic judge is asked about the question "
                                          "before the step twice, so it never sees the replacement; the default "
                                          "there) or corrected (the question before the step against the question "
                                          "with the replacement). Outside --count authors every replacement is "
                                          "gated against the original question")
    replacement_positions: str | None = option(
        None, cli=CONFIG_KEY, choices=REPLACEMENT_POSITIONS, metavar="authors|corrected", identity=WHEN_SET,
        help="--count authors, token level: which inserted positions a step replaces: authors (their code: "
        "int(k x inserted), ranked by the gradient at row i, the i-th prompt token, read at the vocabulary id equal "
        "to the i-th inserted location; the default there) or corrected (ranked by the gradient at each inserted "
        "position's current token, ceil(k x inserted) of them, as outside --count authors)")
    counting: str | None = option(None, choices=COUNTINGS, flag="--count", metavar="ours|authors",
                                  identity=WHEN_SET,
                                  help="ours: the reasoning judge's verdict alone, over attacked examples whose clean "
                                  "reasoning is sound (docs/matcha.md argues for it); authors: the MATCHA authors' "
                                  "code step by step (kept answer AND (LLM judge 0 OR a false equation OR empty "
                                  "reasoning), their one-token-at-a-time insertions, every clean-correct question "
                                  "as the denominator); --preset paper's default. Default: ours")
    target_answer: str = option("gold", choices=("gold", "clean", "auto"),
                                help="gold: attack correctly answered questions; clean: keep the model's own "
                                "answer; auto: gold when at least min_correct (--config) are answered correctly, else clean")
    min_correct: int = option(4, cli=CONFIG_KEY, help="target-answer auto: fewest correct clean answers for the gold target")
    attack_limit: int | None = option(None, cli=MORE, help="attack at most the first N attackable examples", identity=False)
    max_attack_tokens: int | None = option(
        None, cli=CONFIG_KEY, metavar="N", identity=WHEN_SET,
        help="skip, with its reason, an example whose attacked sequence (the prompt with its insertions and the "
        "teacher-forced completion) is over N tokens: every step runs a forward and a backward pass over it "
        f"(default {DEFAULT_ATTACK_TOKENS:,}; 0: no limit, for a machine that can afford it)")
    insert_ratio: float | None = option(None, cli=CONFIG_KEY, help="a: inserted tokens per question token (0.2)")
    topk_ratio: float | None = option(None, cli=CONFIG_KEY, help="k: share of inserted positions replaced per step")
    epsilon: float | None = option(None, cli=CONFIG_KEY, help="embedding level: eps as a fraction of the embedding scale")
    step_fraction: float | None = option(None, cli=CONFIG_KEY, help="embedding level: PGD step as a fraction of eps (0.25)")
    random_start: bool = option(True, cli=CONFIG_KEY, negate="--no-random-start",
                                help="embedding level: start PGD at the clean input (its gradient there is "
                                "exactly zero; --count authors always starts there, as the authors' code does)")
    steps: int | None = option(None, cli=CONFIG_KEY, help="j: optimisation steps (5)")
    n_candidates: int | None = option(None, cli=CONFIG_KEY, help="replacement tokens re-scored by the true loss per position "
                                      "(1 = the paper's gradient pick; more makes the attack GCG-like and costs "
                                      "about 3.6x per attacked example at 8)")
    answer_loss: str | None = option(None, cli=CONFIG_KEY, choices=("answer", "n3"),
                                     help="L_a averaged over the answer-token positions (answer, robusteval's "
                                     "default: about two orders of magnitude more weight) or over the n3 "
                                     "positions up to the answer's end (n3, the paper's)")
    max_redraws: int | None = option(None, cli=CONFIG_KEY,
                                     help="a random insertion the semantic judge rejects is drawn again up to N "
                                     f"times, then the example is skipped with the reason (default {MAX_REDRAWS})")
    max_drift: float | None = option(None, cli=CONFIG_KEY, help="token level: reject a perturbed question whose drift from the "
                                     "original exceeds this before the semantic judge sees it (drift = 1 - cosine "
                                     "of all-MiniLM-L6-v2 embeddings with the drift extra, else the character "
                                     "edit ratio; the summary records which)")
    reasoning_source: str | None = option(None, cli=MORE, choices=REASONING_SOURCES, identity=False,
                                          help="a thinking target: the reasoning attacked and judged: chain (default: "
                                          "the reasoning after the answer in the reply, the paper's quantity), trace "
                                          "(the thinking trace) or both; the answer is always read from the reply. "
                                          "In the run identity when the target thinks")
    thinking: ReasoningOptions = nested(default_factory=ReasoningOptions)
    # The attacked model's prompt shape and budget (max_new_tokens unset: the preset's, else MAX_NEW_TOKENS).
    generation: GenerationOptions = generation_block("chat", "system_prompt", "max_new_tokens")
    success_check: str | None = option(None, cli=CONFIG_KEY, choices=SUCCESS_CHECKS,
                                       help="token level: when to generate and judge: final (once, after the last "
                                       "step: the paper's text) or insertion-and-final (also right after the "
                                       "insertions, stopping there on a success or a changed answer: the authors' "
                                       "implementation, which produced the published tables; --preset paper's "
                                       "default). Default: final")
    prompt: PromptOptions = prompt_block("exemplars")
    sample: int | None = option(None, cli=CONFIG_KEY, help="attack a seeded random sample of N examples (after --limit); "
                                "--preset paper samples 500 StrategyQA questions")
    # Not in the identity: the values it fills are (a preset run resumes under the same settings given one by one).
    preset: str = option("none", choices=PRESET_NAMES, identity=False,
                         help=preset_help() + "; every summary lists its deviations from the paper")
    seed: int = option(DEFAULT_SEED, help="random seed (insertions, PGD starts, sampling), derived per example")

    def __post_init__(self) -> None:
        """Refuse values that cannot run, in the config's own words (the CLI re-words them with flags), before
        any model loads: judge specs are part of the run identity."""

        check_choices(self)
        # frozen: the preset's values and the defaults of the settings a preset may set, filled once, here
        fill_unset(self, {"max_new_tokens": MAX_NEW_TOKENS, "max_redraws": MAX_REDRAWS,
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
        """The attack's hyper-parameters checked where they are declared, :meth:`MatchaConfig.validate` (one place),
        its refusals named in this config's fields (``eps_fraction`` is ``epsilon`` here)."""
        try:
            self.hyperparameters()
        except ConfigError as exc:
            if exc.config_type is not MatchaConfig:
                raise
            raise ConfigError(self, RUN_FIELDS.get(exc.field, exc.field), exc.problem) from None

    @staticmethod
    def presets_setting(name: str) -> list[str]:
        """The presets that set the field ``name`` (named by its deprecated flag's notice)."""
        return presets_setting(name)

    def resolved_counting(self) -> str:
        """The counting a run uses: ``counting`` (set, or filled by a preset), else ours."""
        return self.counting or "ours"

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
        config = MatchaConfig.for_dataset(
            self.data.dataset, level=self.level, variant=self.variant, insert_ratio=self.insert_ratio,
            topk_ratio=self.topk_ratio, eps_fraction=self.epsilon, step_fraction=self.step_fraction,
            # The authors' PGD (--count authors) always starts at the clean input, as their code does.
            random_start=None if self.resolved_counting() == "authors" else self.random_start, steps=self.steps, n_candidates=self.n_candidates,
            max_new_tokens=self.max_new_tokens, target_answer=target, seed=self.seed,
            answer_loss=self.answer_loss or "answer",
            max_redraws=self.max_redraws, max_drift=self.max_drift,
            # Resolved here, so the run identity records the measure and an environment that lost the
            # embedding model cannot resume a run that bounded the cosine.
            drift_measure=drift_measure() if self.max_drift is not None else None,
            success_check=self.success_check or "final",
            counting=self.resolved_counting(),
            replacement_gate=self.replacement_gate or self.resolved_replacement_gate(),  # set: MatchaConfig checks it
            replacement_positions=self.replacement_positions or self.resolved_replacement_positions(),
            reasoning_source=(self.reasoning_source or DEFAULT_REASONING_SOURCE) if thinks else None,
            max_thinking_tokens=self.thinking_budget() if thinks else None,
        )
        config.validate()
        return config

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
        if hyper.n_candidates > 1:
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
        paper.update(topk_ratio=topk, eps_fraction=eps)
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


