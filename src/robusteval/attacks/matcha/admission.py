"""Which clean examples MATCHA may attack, and why not: the context, the per-step token budget, the clean verdict,
a thinking target's trace (a part of :class:`~robusteval.attacks.matcha.run.MatchaRunner`, kept apart so the
runner's file holds the running; sizes only, so a Ray run's driver decides without loading a tokenizer)."""

from __future__ import annotations

from typing import Any

from robusteval.attacks.matcha.authors import insertion_count
from robusteval.attacks.matcha.config import OVER_TOKEN_BUDGET, MatchaConfig
from robusteval.attacks.matcha.layout import PromptLayout
from robusteval.attacks.matcha.thinking import NO_TRACE, ContinuationSpans
from robusteval.data.example import Example
from robusteval.models import WhiteBoxBackend
from robusteval.models.context import PROMPT_TOO_LONG, context_overflow
from robusteval.progress import status
from robusteval.text.thinking import THINKING_TRUNCATED, ReasoningFormat


class AttackAdmission:
    """The runner's admission checks; the runner sets these attributes in its ``__init__``."""

    backend: WhiteBoxBackend
    config: MatchaConfig
    reasoning: ReasoningFormat
    max_attack_tokens: int  # the per-step cost budget (0: none): see MatchaRunConfig.max_attack_tokens

    @property
    def authors_insertion(self) -> bool:
        """The authors' insertions (--count authors, token level): the edited span is the question and the answer
        trigger after it."""
        return self.config.counting == "authors" and self.config.level == "token"

    @property
    def thinks(self) -> bool:
        return self.reasoning.thinks

    @property
    def generation_budget(self) -> int:
        """New tokens per generation: the reply's, plus a thinking target's trace budget."""
        return self.config.generation.budget() + (self.config.thinking.max_thinking_tokens or 0)

    def spans(self, clean: dict[str, Any]) -> ContinuationSpans:
        """A thinking target's clean continuation spans, as its clean record stored them."""
        trace = clean.get("trace_span") or [0, 0]
        return ContinuationSpans((trace[0], trace[1]), clean.get("reply_start", 0), clean["n_answer_tokens"],
                                 len(clean["continuation_ids"]))

    def _overflow(self, example_id: str, prompt_tokens: int, question_tokens: int, trigger_tokens: int = 0, *,
                  attack: bool = False, say: bool = False) -> str | None:
        """Why a prompt of ``prompt_tokens`` does not fit the model's context with the tokens generated after it
        (and, for ``attack`` at the token level, the question's insertions: a x its ``question_tokens``), or None
        (:func:`~robusteval.models.context.context_overflow`). Sizes, not a layout: the driver of a Ray run decides
        from the clean record, without the tokenizer (which would load the model there)."""
        grown = self._with_insertions(prompt_tokens, question_tokens, trigger_tokens) if attack else prompt_tokens
        return context_overflow(self.backend, f"example {example_id}", grown, self.generation_budget, say=say)

    def _with_insertions(self, prompt_tokens: int, question_tokens: int, trigger_tokens: int) -> int:
        """The prompt's tokens once a token-level attack has inserted its tokens (the embedding level inserts none)."""
        if self.config.level != "token":
            return prompt_tokens
        ratio = self.config.real("insert_ratio")
        return prompt_tokens + (insertion_count(ratio, question_tokens, trigger_tokens)
                                if self.authors_insertion else max(1, round(ratio * question_tokens)))

    def over_budget(self, clean: dict[str, Any], *, say: bool) -> str | None:
        """Why attacking ``clean`` would cost more per step than ``max_attack_tokens`` allows (one line naming the
        example and the sizes), or None."""
        if not self.max_attack_tokens:
            return None
        sequence = self._with_insertions(*prompt_sizes(clean)) + len(clean["continuation_ids"])
        if sequence <= self.max_attack_tokens:
            return None
        line = (f"example {clean['id']}: the attacked sequence is {sequence:,} tokens (prompt with insertions + "
                f"completion), over max_attack_tokens={self.max_attack_tokens:,}")
        if say:
            status(f"{line}; skipped (a larger max_attack_tokens, or 0, lifts the budget)")
        return line

    def _too_long(self, ex: Example, layout: PromptLayout) -> dict[str, Any]:
        """The clean record of an example whose prompt does not fit the model's context: not generated, not
        graded, never attacked, and left out of ACC's denominator (``skip_reasons`` counts it)."""
        return {"id": ex.id, "question": ex.question, "question_ids": layout.question, "head_ids": layout.head,
                "tail_ids": layout.tail, "prefix_length": len(layout.prefix), "gold": ex.answer, "completion": "",
                "continuation_ids": [], "n_answer_tokens": 0, "predicted": None, "correct": False,
                "too_long": PROMPT_TOO_LONG, "prompt_tokens": len(layout.ids)}

    def attackable(self, clean: dict[str, Any]) -> tuple[bool, str]:
        if clean.get("too_long"):
            return False, PROMPT_TOO_LONG
        if clean.get("no_answer") or clean.get("thinking_truncated"):
            # No reply to read (a trace never closed, an empty reply cut at the limit): never graded, never attacked
            return False, str(clean.get("no_answer") or THINKING_TRUNCATED)
        if self._overflow(clean["id"], *prompt_sizes(clean), attack=True) is not None:
            return False, PROMPT_TOO_LONG  # fits clean, but not with its insertions
        if self.over_budget(clean, say=False) is not None:
            return False, OVER_TOKEN_BUDGET
        if self.config.target_answer == "gold" and not clean["correct"]:
            return False, "clean answer wrong"
        if clean["predicted"] is None:
            return False, "no answer in the clean completion"
        if self.thinks and "thinking" in clean:  # the reasoning attacked is --reasoning-source's
            if self.spans(clean).cot_spans(self.config.reasoning_source or "chain"):
                return True, ""
            return False, NO_TRACE if self.config.reasoning_source == "trace" else "no chain of thought after the answer"
        if clean["n_answer_tokens"] >= len(clean["continuation_ids"]) and self.config.counting != "authors":
            # The authors attack it too: an empty reasoning counts as a success when the answer is kept.
            return False, "no chain of thought after the answer"  # pipeline.NO_COT
        return True, ""


def prompt_sizes(clean: dict[str, Any]) -> tuple[int, int, int]:
    """(prompt tokens, question tokens, trigger tokens) of a clean record, as its layout had them."""
    question = len(clean["question_ids"])
    return (clean["prefix_length"] + len(clean["head_ids"]) + question + len(clean["tail_ids"]), question,
            len(clean["tail_ids"]))
