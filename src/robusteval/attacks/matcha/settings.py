"""MATCHA's settings, each declared once (issue 38): the fields a run chooses (level, variant, counting, the search
knobs), shared by the run config a user builds (:class:`~robusteval.attacks.matcha.config.MatchaRunConfig`, where
None leaves a setting to the preset, the dataset's paper default or the library default) and the resolved
hyper-parameters the attack runs with (:class:`~robusteval.attacks.matcha.config.MatchaConfig`, where each is
filled). Both inherit :class:`MatchaSettings`; its values are checked here, their combination once resolved
(:meth:`MatchaSettings.check_combination`). Light to import (no torch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robusteval.attacks.matcha.thinking import REASONING_SOURCES
from robusteval.config import (
    CONFIG_KEY,
    MORE,
    WHEN_SET,
    ConfigError,
    check_at_least,
    check_choices,
    check_positive,
    option,
)
from robusteval.seeding import DEFAULT_SEED

VARIANTS = ("full", "random-insert", "random-locs", "cot-loss-only", "gcg-suffix")
#: When the token level generates and judges (see attacks/matcha/token.py): once after the last step (the
#: paper's text), or also right after the insertions (the authors' implementation, the published tables).
SUCCESS_CHECKS = ("final", "insertion-and-final")
#: How outcomes are counted (docs/matcha.md, "Counting"): robusteval's rules ("ours": the reasoning judge's verdict
#: alone, over the attacked examples whose clean reasoning is sound) or the MATCHA authors' code step by step
#: ("authors": kept answer AND (LLM judge 0 OR a false equation OR empty reasoning), their insertion procedure,
#: over every question answered correctly before perturbation).
COUNTINGS = ("ours", "authors")
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
TARGET_ANSWERS = ("gold", "clean", "auto")
ANSWER_LOSSES = ("answer", "n3")
#: The library's value of each setting a run leaves unset and no preset fills (``topk_ratio`` and ``epsilon``: of
#: a dataset the paper did not attack; the paper's per dataset are in config_presets.DATASET_DEFAULTS), typed for
#: the attacks' own records (token.TokenAttackConfig, embedding.EmbeddingAttackConfig), and as one table.
INSERT_RATIO = 0.2
TOPK_RATIO = 0.25
EPSILON = 0.005
STEP_FRACTION = 0.25
STEPS = 5
N_CANDIDATES = 1
MAX_REDRAWS = 5
SUCCESS_CHECK = "final"
LIBRARY_DEFAULTS: dict[str, Any] = {
    "insert_ratio": INSERT_RATIO, "topk_ratio": TOPK_RATIO, "epsilon": EPSILON, "step_fraction": STEP_FRACTION,
    "steps": STEPS, "n_candidates": N_CANDIDATES, "answer_loss": "answer", "max_redraws": MAX_REDRAWS,
    "success_check": SUCCESS_CHECK, "counting": "ours"}


@dataclass(frozen=True, kw_only=True)
class MatchaSettings:
    """What a MATCHA run chooses. None: unset (the preset's value, else the dataset's paper default, else
    :data:`LIBRARY_DEFAULTS`); the run config's ``--config`` keys, study keys and hidden flags are these names."""

    level: str = option("token", choices=("token", "embedding"), help="token or embedding level")
    variant: str = option("full", choices=VARIANTS,
                          help="full, or a baseline: random-insert, random-locs, cot-loss-only, gcg-suffix")
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
    target_answer: str = option("gold", choices=TARGET_ANSWERS,
                                help="gold: attack correctly answered questions; clean: keep the model's own "
                                "answer; auto: gold when at least min_correct (--config) are answered correctly, else clean")
    insert_ratio: float | None = option(None, cli=CONFIG_KEY, help="a: inserted tokens per question token "
                                      f"({LIBRARY_DEFAULTS['insert_ratio']})")
    topk_ratio: float | None = option(None, cli=CONFIG_KEY, help="k: share of inserted positions replaced per step")
    epsilon: float | None = option(None, cli=CONFIG_KEY, help="embedding level: eps as a fraction of the embedding scale")
    step_fraction: float | None = option(None, cli=CONFIG_KEY, help="embedding level: PGD step as a fraction of eps "
                                       f"({LIBRARY_DEFAULTS['step_fraction']})")
    # None: the counting's (a random start under ours; the clean input under --count authors, as the authors'
    # code starts, IEA L276); a run config fills True, and the authors' counting resolves it to the clean start.
    random_start: bool | None = option(None, cli=CONFIG_KEY, negate="--no-random-start",
                                       help="embedding level: start PGD at the clean input (its gradient there is "
                                       "exactly zero; --count authors always starts there, as the authors' code "
                                       "does)")
    steps: int | None = option(None, cli=CONFIG_KEY, help=f"j: optimisation steps ({LIBRARY_DEFAULTS['steps']})")
    n_candidates: int | None = option(None, cli=CONFIG_KEY, help="replacement tokens re-scored by the true loss per position "
                                      "(1 = the paper's gradient pick; more makes the attack GCG-like and costs "
                                      "about 3.6x per attacked example at 8)")
    answer_loss: str | None = option(None, cli=CONFIG_KEY, choices=ANSWER_LOSSES,
                                     help="L_a averaged over the answer-token positions (answer, robusteval's "
                                     "default: about two orders of magnitude more weight) or over the n3 "
                                     "positions up to the answer's end (n3, the paper's)")
    max_redraws: int | None = option(None, cli=CONFIG_KEY,
                                     help="a random insertion the semantic judge rejects is drawn again up to N "
                                     f"times, then the example is skipped with the reason (default {LIBRARY_DEFAULTS['max_redraws']})")
    max_drift: float | None = option(None, cli=CONFIG_KEY, help="token level: reject a perturbed question whose drift from the "
                                     "original exceeds this before the semantic judge sees it (drift = 1 - cosine "
                                     "of all-MiniLM-L6-v2 embeddings with the drift extra, else the character "
                                     "edit ratio; the summary records which)")
    reasoning_source: str | None = option(None, cli=MORE, choices=REASONING_SOURCES, identity=False,
                                          help="a thinking target: the reasoning attacked and judged: chain (default: "
                                          "the reasoning after the answer in the reply, the paper's quantity), trace "
                                          "(the thinking trace) or both; the answer is always read from the reply. "
                                          "In the run identity when the target thinks")
    success_check: str | None = option(None, cli=CONFIG_KEY, choices=SUCCESS_CHECKS,
                                       help="token level: when to generate and judge: final (once, after the last "
                                       "step: the paper's text) or insertion-and-final (also right after the "
                                       "insertions, stopping there on a success or a changed answer: the authors' "
                                       "implementation, which produced the published tables; --preset paper's "
                                       "default). Default: final")
    seed: int = option(DEFAULT_SEED, help="random seed (insertions, PGD starts, sampling), derived per example")

    def check_values(self) -> None:
        """Refuse a value no run can take (each setting alone; unset ones pass)."""
        check_choices(self)
        for name in ("insert_ratio", "topk_ratio", "epsilon", "step_fraction"):
            check_positive(self, name)
        for name, minimum in (("steps", 0), ("n_candidates", 1), ("max_redraws", 0), ("max_drift", 0)):
            check_at_least(self, name, minimum)

    def check_combination(self) -> None:
        """Refuse settings that cannot run together; on resolved values (a preset may fill the counting a
        replacement gate needs)."""
        authors_token = self.resolved_counting() == "authors" and self.level == "token"
        if self.replacement_gate is not None and not authors_token:
            raise ConfigError(self, "replacement_gate", "chooses between the authors' replacement gate and its "
                              "correction: {counting=authors} at {level=token} only")
        if self.replacement_positions is not None and not authors_token:
            raise ConfigError(self, "replacement_positions", "chooses between the authors' replacement positions "
                              "and their correction: {counting=authors} at {level=token} only")
        if self.level == "embedding" and self.variant not in ("full", "cot-loss-only"):
            raise ConfigError(self, "variant", f"{self.variant} is a token-level baseline; {{level=embedding}} takes "
                              "full or cot-loss-only")
        if self.max_drift is not None and self.level == "embedding":
            raise ConfigError(self, "max_drift", "bounds the drift of perturbed question text; {level=embedding} "
                              "perturbs no text")
        if self.success_check not in (None, "final") and self.level == "embedding":
            raise ConfigError(self, "success_check", f"{self.success_check} is for the token level "
                              "({level=embedding} inserts nothing)")

    def resolved_counting(self) -> str:
        """The counting a run uses: ``counting`` (set, or filled by a preset), else ours."""
        return self.counting or "ours"
