"""What the model under test is shown around each question: one typed block, :class:`PromptOptions`, nested as
``prompt`` in every method's config (the in-context exemplars of the answer-first methods, the template of the
classification methods), declared and validated once, here; its system prompt is part of
:class:`robusteval.models.generation.GenerationOptions`.

Light to import (the checks load their modules only for a value that is set). A method names the keys it reads
with :func:`prompt_block`; the keys stay flat on the command line, in ``--config`` files (or a ``[prompt]`` table),
study files and the run identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from robusteval.config import field_check, option, shared_block, validated

#: Every setting of the block, in declaration order.
PROMPT_KEYS = ("exemplars", "template")


@validated
@dataclass(frozen=True)
class PromptOptions:
    """The prompt around each question. Unset (None): the method's default (its help says which)."""

    exemplars: str | None = option(None, metavar="math|yesno|PATH",
                                   help="in-context exemplars (default: the built-in set matching the answer type; "
                                   "attack matcha --preset paper needs a file, e.g. the Wei et al. sets; transfer: "
                                   "the source run's set, where it cannot be found by itself (its prompt prefix hash "
                                   "is in the identity))")
    template: str | None = option(None, metavar="nli-zh|yesno|text|PATH",
                                  help="classification prompt template (default: nli-zh for OCNLI, yesno for yes/no "
                                  "labels, else text)")

    def __post_init__(self) -> None:
        if self.exemplars is not None:
            from robusteval.prompts.answer_first import check_exemplars

            with field_check(self, "exemplars"):
                check_exemplars(self.exemplars)
        if self.template is not None:
            from robusteval.evals.classification import check_template_source

            with field_check(self, "template"):
                check_template_source(self.template)


def prompt_block(*keys: str, unrecorded: tuple[str, ...] = ()) -> Any:
    """The ``prompt`` field of a method's config: the keys it reads; ``unrecorded``: those its run identity leaves
    out (it records what they resolve to instead: transfer's exemplars, by their prompt's hash)."""
    return shared_block(PromptOptions, PROMPT_KEYS, keys, unrecorded=unrecorded)


class PromptFields:
    """Read access to a config's ``prompt`` block under the flat names (``config.exemplars``)."""

    prompt: PromptOptions

    @property
    def exemplars(self) -> str | None:
        return self.prompt.exemplars

    @property
    def template(self) -> str | None:
        return self.prompt.template
