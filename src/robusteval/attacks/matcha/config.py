"""MATCHA's configuration, light to import (no torch): the attack's hyper-parameters with the paper's
defaults per dataset, and the run config behind ``robusteval attack matcha`` and ``robusteval.attack_matcha``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from robusteval.attacks.matcha.thinking import DEFAULT_REASONING_SOURCE, REASONING_SOURCES
from robusteval.config import (
    WHEN_SET,
    ConfigError,
    check_at_least,
    check_chat,
    check_choice,
    check_choices,
    check_positive,
    field_check,
    nested,
    option,
    validated,
)
from robusteval.data.spec import DataSpec
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
#: Unreadable LLM verdicts re-asked this many times under --count authors (their API path asks up to 5 times).
AUTHORS_JUDGE_RETRIES = 4

#: Paper defaults per dataset: (top-k ratio, epsilon fraction).
DATASET_DEFAULTS = {"singleeq": (0.5, 0.02), "gsm8k": (0.25, 0.005), "strategyqa": (0.5, 0.03)}
FALLBACK_DEFAULTS = (0.25, 0.005)
#: Reasoning judges that need no model (and see only numbers).
OFFLINE_JUDGES = ("arith", "grounding")
#: The paper attacks a seeded random sample of 500 StrategyQA questions.
PAPER_STRATEGYQA_SAMPLE = 500


def drift_measure() -> str:
    """What ``--max-drift`` bounds in this environment (no model loads: only whether it is installed)."""
    from robusteval.analysis.drift import resolve_measure

    return resolve_measure("auto")


#: The default of ``max_attack_tokens``: the longest attacked sequence (prompt with insertions + completion) an
#: example may have. Each step's forward and backward pass grows with it (attention quadratically): a
#: 10,000-token question against a 64k-context model ran over 15 minutes per example (docs/matcha.md).
DEFAULT_ATTACK_TOKENS = 8192
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
    random_start: bool = True  # embedding level: PGD from a random point in the eps-ball
    steps: int = 5
    n_candidates: int = 1  # the paper's pure gradient pick; more re-scores candidates by the true loss
    max_new_tokens: int = 256
    target_answer: str = "gold"  # gold | clean
    seed: int = 0
    answer_loss: str = "answer"  # L_a averaged over the answer positions ("answer") or over n3 ("n3", paper)
    max_redraws: int = 5  # insertions the semantic judge rejects are drawn again this many times
    max_drift: float | None = None  # token level: candidates drifting further are rejected before the judge
    drift_measure: str | None = None  # what max_drift bounds: "embedding" (1 - cosine) or "char" (edit ratio)
    success_check: str = "final"  # token level: "final" or "insertion-and-final" (SUCCESS_CHECKS)
    counting: str = "ours"  # COUNTINGS: the success rule, denominators and (token level) insertion procedure
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
        ``success_check`` left at ``final`` or a ``counting`` left at ``ours``, and the thinking fields of a target
        without thinking (runs made before the options existed keep their identity)."""
        record = asdict(self)
        if record["success_check"] == "final":
            del record["success_check"]
        if record["counting"] == "ours":
            del record["counting"]
        for name in ("reasoning_source", "max_thinking_tokens"):
            if record[name] is None:
                del record[name]
        return record


@validated
@dataclass(frozen=True)
class MatchaRunConfig:
    """One MATCHA attack run: data, attack level and variant, judges, hyper-parameters (None: the paper's
    default for the dataset, see :data:`robusteval.attacks.matcha.run.DATASET_DEFAULTS`)."""

    data: DataSpec = nested()
    level: str = option("token", choices=("token", "embedding"), help="token or embedding level")
    variant: str = option("full", choices=VARIANTS,
                          help="full, or a baseline: random-insert, random-locs, cot-loss-only, gcg-suffix")
    judge: str = option("arith", metavar="SPEC|arith",
                        help="reasoning judge: arith, grounding, embedded, a model spec, A+B (wrong if either says "
                        "wrong), vote:A,B,C")
    semantic_judge: str = option("none", metavar="SPEC|none",
                                 help="judge that must accept each token replacement as meaning-preserving")
    judge_prompt: str | None = option(None, metavar="FILE", identity=WHEN_SET,
                                      help="the reasoning LLM judge's prompt: a string.Template file with $question, "
                                      "$reference and $candidate ($$ for a literal $); e.g. the MATCHA authors' "
                                      "criteria prompt wrapped as docs/matcha.md shows")
    semantic_judge_prompt: str | None = option(None, metavar="FILE", identity=WHEN_SET,
                                               help="the semantic LLM judge's prompt: a string.Template file with "
                                               "$original and $perturbed")
    judge_retries: int | None = option(None, metavar="N", identity=WHEN_SET,
                                       help="re-ask an LLM judge whose verdict cannot be read up to N times (sampled "
                                       "at temperature 0.7), then count the example apart as unjudged (default: "
                                       f"{AUTHORS_JUDGE_RETRIES} under --count authors, else 0)")
    judge_max_thinking_tokens: int | None = option(None, metavar="N", identity=WHEN_SET,
                                                   help="a thinking LLM judge's trace budget before its generated "
                                                   "verdict (its chat template names think tags; --judge-chat) "
                                                   "(default 2048)")
    counting: str | None = option(None, choices=COUNTINGS, flag="--count", metavar="ours|authors",
                                  identity=WHEN_SET,
                                  help="ours: the reasoning judge's verdict alone, over attacked examples whose clean "
                                  "reasoning is sound (docs/matcha.md argues for it); authors: the MATCHA authors' "
                                  "code step by step (kept answer AND (LLM judge 0 OR a false equation OR empty "
                                  "reasoning), their one-token-at-a-time insertions, every clean-correct question "
                                  "as the denominator); --preset paper's default. Default: ours")
    judge_chat: bool = option(False, help="ask LLM judges through their chat template (hf) or chat endpoint "
                              "(openai), the judge prompt as one user turn")
    error_classifier: str | None = option(None, metavar="MODEL-SPEC",
                                          help="an LLM that names the error type of successes no checker can "
                                          "(arith: wrong calculation, grounding: wrong information or irrelevant "
                                          "information); unset: those stay unclassified")
    target_answer: str = option("gold", choices=("gold", "clean", "auto"),
                                help="gold: attack correctly answered questions; clean: keep the model's own "
                                "answer; auto: gold when at least --min-correct are answered correctly, else clean")
    min_correct: int = option(4, help="target-answer auto: fewest correct clean answers for the gold target")
    attack_limit: int | None = option(None, help="attack at most the first N attackable examples", identity=False)
    max_attack_tokens: int | None = option(
        None, metavar="N", identity=WHEN_SET,
        help="skip, with its reason, an example whose attacked sequence (the prompt with its insertions and the "
        "teacher-forced completion) is over N tokens: every step runs a forward and a backward pass over it "
        f"(default {DEFAULT_ATTACK_TOKENS:,}; 0: no limit, for a machine that can afford it)")
    insert_ratio: float | None = option(None, help="a: inserted tokens per question token (0.2)")
    topk_ratio: float | None = option(None, help="k: share of inserted positions replaced per step")
    epsilon: float | None = option(None, help="embedding level: eps as a fraction of the embedding scale")
    step_fraction: float | None = option(None, help="embedding level: PGD step as a fraction of eps (0.25)")
    random_start: bool = option(True, negate="--no-random-start",
                                help="embedding level: start PGD at the clean input (its gradient there is "
                                "exactly zero)")
    steps: int | None = option(None, help="j: optimisation steps (5)")
    n_candidates: int | None = option(None, help="replacement tokens re-scored by the true loss per position "
                                      "(1 = the paper's gradient pick; more makes the attack GCG-like and costs "
                                      "about 3.6x per attacked example at 8)")
    answer_loss: str | None = option(None, choices=("answer", "n3"),
                                     help="L_a averaged over the answer-token positions (answer, robusteval's "
                                     "default: about two orders of magnitude more weight) or over the n3 "
                                     "positions up to the answer's end (n3, the paper's)")
    max_redraws: int = option(5, help="a random insertion the semantic judge rejects is drawn again up to N "
                              "times, then the example is skipped with the reason")
    max_drift: float | None = option(None, help="token level: reject a perturbed question whose drift from the "
                                     "original exceeds this before the semantic judge sees it (drift = 1 - cosine "
                                     "of all-MiniLM-L6-v2 embeddings with the drift extra, else the character "
                                     "edit ratio; the summary records which)")
    max_new_tokens: int = option(256, help="generation budget per answer (a thinking target's reply; its trace gets "
                                 "--max-thinking-tokens on top)")
    reasoning_source: str | None = option(None, choices=REASONING_SOURCES, identity=False,
                                          help="a thinking target: the reasoning attacked and judged: chain (default: "
                                          "the reasoning after the answer in the reply, the paper's quantity), trace "
                                          "(the thinking trace) or both; the answer is always read from the reply. "
                                          "In the run identity when the target thinks")
    thinking: ReasoningOptions = nested(default_factory=ReasoningOptions)
    success_check: str | None = option(None, choices=SUCCESS_CHECKS,
                                       help="token level: when to generate and judge: final (once, after the last "
                                       "step: the paper's text) or insertion-and-final (also right after the "
                                       "insertions, stopping there on a success or a changed answer: the authors' "
                                       "implementation, which produced the published tables; --preset paper's "
                                       "default). Default: final")
    exemplars: str | None = option(None, metavar="math|yesno|PATH",
                                   help="in-context exemplars (default: built-in set matching the answer type; "
                                   "--preset paper needs a file, e.g. the Wei et al. sets)")
    chat: bool = option(False, help="prompt the attacked model through its chat template (exemplars as earlier "
                        "turns); the editable span is the question inside the user turn")
    system_prompt: str | None = option(None, help="--chat: the system prompt (default: asks for the answer "
                                       "first, then the reasoning)")
    sample: int | None = option(None, help="attack a seeded random sample of N examples (after --limit); "
                                "--preset paper samples 500 StrategyQA questions")
    preset: str = option("none", choices=("none", "paper"),
                         help="paper: the paper's settings, refusing what it would not use (built-in exemplars, "
                         "no LLM judge or semantic judge); every summary lists its deviations from the paper")
    seed: int = option(DEFAULT_SEED, help="random seed (insertions, PGD starts, sampling), derived per example")

    def __post_init__(self) -> None:
        """Refuse values that cannot run, in the config's own words (the CLI re-words them with flags), before
        any model loads: judge specs are part of the run identity."""
        from robusteval.judges.base import REASONING, SEMANTIC, check_judge_prompt, check_judge_spec
        from robusteval.judges.errortypes import check_error_classifier_spec

        check_choices(self)
        check_chat(self)
        if self.reasoning_source is not None and self.thinking.reasoning == "none":
            raise ConfigError(self, "reasoning_source", "the target is read without a trace (reasoning none); "
                              "leave it unset")
        if self.thinking.reasoning == "harmony":
            raise ConfigError(self.thinking, "reasoning", "MATCHA attacks think-tag traces (harmony's channels are "
                              "special tokens the attack's text spans do not hold); use think-tags or none")
        for name in ("insert_ratio", "topk_ratio", "epsilon", "step_fraction", "max_new_tokens", "sample"):
            check_positive(self, name)
        # attack_limit 0: the clean pass alone (a later run with a larger limit resumes it)
        for name, minimum in (("steps", 0), ("n_candidates", 1), ("max_redraws", 0), ("min_correct", 0),
                              ("max_drift", 0), ("attack_limit", 0), ("judge_retries", 0),
                              ("max_attack_tokens", 0), ("judge_max_thinking_tokens", 1)):
            check_at_least(self, name, minimum)
        if self.resolved_counting() == "authors" and self.level == "token":
            # Their insertions land anywhere in the question and the answer trigger: a chat template's markup
            # there is not what they attacked, and the suffix baseline inserts nothing inside.
            if self.chat:
                raise ConfigError(self, "chat", "{counting=authors} inserts into the question and the answer trigger "
                                  "of a raw prompt, as the authors' code does; attack without {chat}")
            if self.variant == "gcg-suffix":
                raise ConfigError(self, "variant", "gcg-suffix appends a suffix; {counting=authors} inserts one token "
                                  "at a time inside the question (use another variant or {counting=ours})")
        if self.level == "embedding":
            if self.variant not in ("full", "cot-loss-only"):
                raise ConfigError(self, "variant", f"{self.variant} is a token-level baseline; {{level=embedding}} "
                                  "takes full or cot-loss-only")
            if self.max_drift is not None:
                raise ConfigError(self, "max_drift", "bounds the drift of perturbed question text; "
                                  "{level=embedding} perturbs no text")
            if self.success_check not in (None, "final"):
                raise ConfigError(self, "success_check", f"{self.success_check} is for the token level "
                                  "({level=embedding} inserts nothing)")
        with field_check(self, "judge"):
            check_judge_spec(self.judge, task=REASONING)
        with field_check(self, "semantic_judge"):
            check_judge_spec(self.semantic_judge, task=SEMANTIC)
        with field_check(self, "error_classifier"):
            check_error_classifier_spec(self.error_classifier)
        with field_check(self, "judge_prompt"):
            check_judge_prompt(self.judge_prompt, REASONING)
        with field_check(self, "semantic_judge_prompt"):
            check_judge_prompt(self.semantic_judge_prompt, SEMANTIC)

    def resolved_counting(self) -> str:
        """The counting a run uses: ``--count``, else the authors' under ``--preset paper``, else ours."""
        return self.counting or ("authors" if self.preset == "paper" else "ours")

    def resolved_judge_retries(self) -> int:
        """How often an unreadable LLM verdict is asked again before the example is counted apart."""
        if self.judge_retries is not None:
            return self.judge_retries
        return AUTHORS_JUDGE_RETRIES if self.resolved_counting() == "authors" else 0

    def hyperparameters(self, target_answer: str | None = None, *, thinks: bool = False) -> MatchaConfig:
        """The attack's resolved hyper-parameters (dataset defaults filled in); ``thinks``: the target writes a
        trace, so the reasoning source and the trace's budget are resolved too."""
        target = target_answer or ("gold" if self.target_answer == "auto" else self.target_answer)
        config = MatchaConfig.for_dataset(
            self.data.dataset, level=self.level, variant=self.variant, insert_ratio=self.insert_ratio,
            topk_ratio=self.topk_ratio, eps_fraction=self.epsilon, step_fraction=self.step_fraction,
            random_start=self.random_start, steps=self.steps, n_candidates=self.n_candidates,
            max_new_tokens=self.max_new_tokens, target_answer=target, seed=self.seed,
            answer_loss=self.answer_loss or ("n3" if self.preset == "paper" else "answer"),
            max_redraws=self.max_redraws, max_drift=self.max_drift,
            # Resolved here, so the run identity records the measure and an environment that lost the
            # embedding model cannot resume a run that bounded the cosine.
            drift_measure=drift_measure() if self.max_drift is not None else None,
            success_check=self.success_check or ("insertion-and-final" if self.preset == "paper"
                                                 and self.level == "token" else "final"),
            counting=self.resolved_counting(),
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
        if self.sample is not None:
            return self.sample
        return PAPER_STRATEGYQA_SAMPLE if self.preset == "paper" and self.data.dataset == "strategyqa" else None

    def check(self, answer_type: str) -> None:
        """Refuse settings that cannot build or cannot measure what the summary would claim (before any model
        loads or any run directory is made: judge specs are part of the run identity)."""
        from robusteval.judges.base import spec_atoms

        judges = spec_atoms(self.judge)
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
        if self.semantic_judge.strip() == "none":
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

        atoms = set(spec_atoms(self.judge))
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
        if "grounding" in atoms:
            out.append("reasoning judged by the grounding checker (quantities not from the question), not only an "
                       "LLM judge")
        if self.semantic_judge.strip() == "none":
            out.append("no semantic judge gates the perturbations")
        if hyper.target_answer == "clean" or self.target_answer == "auto":
            out.append("target answer may be the model's own clean answer, not the gold one")
        if self.data.dataset not in DATASET_DEFAULTS:
            out.append(f"dataset '{self.data.dataset}' has no paper defaults; k={topk}, eps={eps} used")
        paper = {"insert_ratio": 0.2, "steps": 5, "max_new_tokens": 256, "topk_ratio": topk, "eps_fraction": eps}
        for name, value in paper.items():
            if getattr(hyper, name) != value:
                out.append(f"{name} = {getattr(hyper, name)} (paper: {value})")
        if self.chat:
            out.append("prompted through the chat template (the paper prompts the raw model)")
        if hyper.max_drift is not None:
            out.append(f"perturbations bounded by --max-drift {hyper.max_drift} ({hyper.drift_measure} measure)")
        if hyper.level == "token" and hyper.variant != "random-insert" and hyper.success_check == "final":
            out.append("success judged only after the last step (the authors' implementation, behind the published "
                       "tables, also judges right after the insertions: --success-check insertion-and-final)")
        return out


