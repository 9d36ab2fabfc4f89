"""Perturbation settings as a config: the method resources, protections and change budget that ``perturb``,
``robustness`` and the word-importance attack share, with what each command used to compute from its flags.

:class:`CandidateSpec` is what an attack needs to ask methods for candidates (no change budget: an attack
decides itself how much to change); :class:`PerturbationSpec` adds ``--rate``/``--min-changes``/
``--max-changes`` for commands that perturb whole texts. Light to import: models load on use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from robusteval.config import (
    WHEN_SET,
    ConfigError,
    check_at_least,
    check_choices,
    identity_fields,
    option,
    validated,
)
from robusteval.data.example import Example
from robusteval.perturbations.base import ChangeBudget, Language, Perturbation, Protection, detect_language
from robusteval.perturbations.registry import (
    MAX_CANDIDATES,
    PIVOT_LANGUAGE,
    MethodOptions,
    similarity_applies,
)
from robusteval.perturbations.similarity import check_measure_available


def target_device(backend: Any) -> str:
    """Where models a method loads itself (masked LM, re-ranker) go: where the target model runs."""
    from robusteval.models.identity import backend_identity

    return str(backend_identity(backend).get("device") or "auto")


#: Builds a model from a spec (a translator for back-translation): the run's own loader, so a translator
#: gets the command's backend options (dtype, device, API settings).
ModelLoader = Callable[[str], Any]


@validated
@dataclass(frozen=True)
class CandidateSpec:
    """Method resources and protections: which language, fields and words, and the models methods read."""

    language: str = option("auto", choices=("auto", "zh", "en"), help="text language (auto: detected from the data)")
    perturb_fields: str | None = option(None, metavar="F1,F2",
                                        help="text fields to perturb (default: the question, plus the hypothesis "
                                        "for NLI data)")
    protect_words: str = option("", metavar="W1,W2", help="extra words never to change")
    perturb_label_words: bool = option(False, help="allow changing label words that occur in the text "
                                                   "(protected by default)")
    max_candidates: int = option(MAX_CANDIDATES, help="candidates per span (attacks query each)")
    embedding_model: str | None = option(None, metavar="PATH|hub-id",
                                         help="W-wordembedding: an hf model whose input-embedding matrix gives "
                                         "neighbours")
    vectors: str | None = option(None, metavar="PATH", help="W-wordembedding: a word2vec/GloVe text file")
    mlm_model: str | None = option(None, metavar="PATH|hub-id", help="W-maskedlm: any HF fill-mask model")
    rerank_model: str | None = option(None, metavar="SPEC", help="W-maskedlm: causal LM that re-ranks candidates")
    translator: str | None = option(None, metavar="SPEC",
                                    help="S-backtranslation: the translator model (any backend)")
    pivot_language: str = option(PIVOT_LANGUAGE, help="S-backtranslation: the pivot language")

    def __post_init__(self) -> None:
        check_choices(self)
        check_at_least(self, "max_candidates", 1, optional=False)

    def resolve_language(self, examples: Sequence[Example]) -> Language:
        """``language``, or the language detected from the first 50 questions when it is ``auto``."""
        if self.language != "auto":
            return self.language  # type: ignore[return-value]
        return detect_language(" ".join(ex.question for ex in examples[:50]))

    def text_fields(self, examples: Sequence[Example]) -> list[str]:
        """The text fields to perturb: ``perturb_fields``, else the question plus an NLI hypothesis."""
        if self.perturb_fields:
            return [f.strip() for f in self.perturb_fields.split(",") if f.strip()]
        fields = ["text"]
        if examples and isinstance(examples[0].meta.get("hypothesis"), str):
            fields.append("hypothesis")
        return fields

    def protection(self, examples: Sequence[Example], extra_words: Sequence[str] = ()) -> Protection:
        """``protect_words``, plus the dataset's labels and ``extra_words`` (a template's label words) unless
        ``perturb_label_words``: a label word changed in the text would leak or hide the answer."""
        words = {w.strip() for w in self.protect_words.split(",") if w.strip()}
        if not self.perturb_label_words:
            words |= {ex.answer for ex in examples if ex.answer_type == "label"}
            words |= set(extra_words)
        return Protection(words=frozenset(words))

    def method_options(self, load_model: ModelLoader | None = None, *, device: str = "auto") -> MethodOptions:
        """What the method factories read; the translator (if any) is built with ``load_model(spec)``
        (default: ``load_backend`` with default options). ``device``: for models a method loads itself."""
        translator = None
        if self.translator:
            if load_model is None:
                from robusteval.models import load_backend

                load_model = load_backend
            translator = load_model(self.translator)
        return MethodOptions(
            max_candidates=self.max_candidates,
            embedding_model=self.embedding_model,
            vectors=self.vectors,
            mlm_model=self.mlm_model,
            rerank_model=self.rerank_model,
            translator=translator,
            pivot_language=self.pivot_language,
            device=device,
        )

    def check_method(self, method: str, language: Language) -> None:
        """Refuse an unknown method, or one missing what it needs, before a model loads or a run is claimed."""
        from robusteval.perturbations.registry import method_info

        method_info(method, language)
        if self.translator is None and method.startswith("S-"):
            raise ConfigError(self, "translator", f"{method} needs a translator model spec (the model that "
                              "translates)")

    def identity(self) -> dict[str, Any]:
        """Every setting: each one can change the perturbed texts (flattened into run identities); those marked
        ``identity="when-set"`` only when set."""
        return identity_fields(self)


@validated
@dataclass(frozen=True)
class PerturbationSpec(CandidateSpec):
    """:class:`CandidateSpec` plus the change budget of whole-text perturbation (None: the method's default)."""

    rate: float | None = option(None, help="share of characters/words to change (default: the method's, "
                                           "0.1 char / 0.15 word)")
    min_changes: int | None = option(None, help="at least this many changes per text (default: 3 for "
                                                "character-level methods)")
    max_changes: int | None = option(None, help="at most this many changes per text (default: 15 for "
                                                "character-level methods)")
    # In the identity only when set: runs and perturbed files made before the option keep their identity.
    min_similarity: float | None = option(None, metavar="X", identity=WHEN_SET,
                                          help="word- and sentence-level methods: refuse a substitution or "
                                          "back-translation less similar to the original than X (0-1; English: "
                                          "cosine of all-MiniLM-L6-v2 embeddings, drift extra; Chinese: cosine of "
                                          "multilingual-e5-small embeddings, zh-meaning extra, else chrF as the "
                                          "fallback): the word's next candidate is tried, or the original kept "
                                          "(unset: no filter)")

    # Unset, resolved for the run's methods (check_similarity_methods): on where a word-level method runs. In
    # the identity only when on, so a run with it off has the identity runs had before it became the default.
    keep_pos: bool | None = option(None, identity=WHEN_SET,
                                   help="word-level methods: refuse a substitution that changes the word's part "
                                   "of speech (Chinese: jieba posseg in context; English: WordNet's parts of "
                                   "speech, no offline tagger ships), the word's next candidate is tried; "
                                   "combines with --min-similarity (the default for word-level methods; "
                                   "--no-keep-pos turns it off)")
    no_keep_pos: bool = option(False, identity=False,
                               help="word-level methods: turn off the part-of-speech constraint (on by default: "
                               "measured in docs/perturbations.md)")
    # Unset, resolved to "one" where W-synonym runs; in the identity only as "one" (see keep_pos).
    synonym_senses: str | None = option(None, choices=("one", "all"), identity=WHEN_SET,
                                        help="W-synonym: 'one' (the default) offers a synonym only where the word "
                                        "has one sense to choose from (Chinese: the word and the synonym each in "
                                        "one Cilin group; English: the word's commonest WordNet sense only); "
                                        "'all': every sense's synonyms, as before (measured in "
                                        "docs/perturbations.md)")

    # Unset, resolved to "drop" where C-radical runs; in the identity only as "drop" (see keep_pos).
    radical_strokes: str | None = option(None, choices=("drop", "keep"), identity=WHEN_SET,
                                         help="C-radical: 'drop' (the default) refuses a split with a bare stroke "
                                         "among its components (上 -> 丶丨一: the character is lost); 'keep': every "
                                         "split, as before (measured in docs/perturbations.md)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.no_keep_pos:
            if self.keep_pos:
                raise ConfigError(self, "no_keep_pos", "contradicts keep_pos: give one of them")
            object.__setattr__(self, "keep_pos", False)
            object.__setattr__(self, "no_keep_pos", False)  # one setting, however it was given
        for name in ("rate", "min_similarity"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not 0 <= value <= 1):
                raise ConfigError(self, name, f"must be a share within [0, 1], got {value!r}")
        check_at_least(self, "min_changes", 0)
        check_at_least(self, "max_changes", 0)
        if self.min_changes is not None and self.max_changes is not None and self.max_changes < self.min_changes:
            raise ConfigError(self, "max_changes", f"{self.max_changes} is below {{min_changes={self.min_changes}}}")

    def identity(self) -> dict[str, Any]:
        """As :meth:`CandidateSpec.identity`; a constraint turned off is left out (its identity is the one runs
        had before it was a default), as is ``no_keep_pos`` (folded into ``keep_pos``)."""
        out = super().identity()
        if out.get("keep_pos") is False:
            del out["keep_pos"]
        for name, before in (("synonym_senses", "all"), ("radical_strokes", "keep")):
            if out.get(name) == before:
                del out[name]
        return out

    def method_options(self, load_model: ModelLoader | None = None, *, device: str = "auto") -> MethodOptions:
        """:meth:`CandidateSpec.method_options` with the similarity gate's minimum."""
        return dataclasses.replace(super().method_options(load_model, device=device),
                                   min_similarity=self.min_similarity, keep_pos=bool(self.keep_pos),
                                   one_sense=self.synonym_senses == "one",
                                   bare_strokes=self.radical_strokes != "drop")

    def check_method(self, method: str, language: Language) -> None:
        """As :meth:`CandidateSpec.check_method`; a gated method's measure must be available (English: the
        embedding model)."""
        super().check_method(method, language)
        if self.min_similarity is not None and similarity_applies(method):
            check_measure_available(language)

    def check_similarity_methods(self, config: object, methods: Sequence[str]) -> None:
        """Refuse ``min_similarity`` when none of ``methods`` (those generated) applies it, and ``keep_pos``
        when none is word-level: it would be ignored. Then resolve the defaults that depend on the methods
        (:meth:`resolve_defaults`)."""
        from robusteval.perturbations.registry import pos_applies

        if self.keep_pos and "keep_pos" not in self._resolved and not any(pos_applies(method) for method in methods):
            raise ConfigError(config, "keep_pos", "applies to word-level methods (W-*) only, and this run "
                              f"perturbs with none (methods: {', '.join(methods) or 'none'})")
        if self.min_similarity is not None and not any(similarity_applies(method) for method in methods):
            raise ConfigError(config, "min_similarity", "applies to word- and sentence-level methods (W-*, S-*) "
                              f"only, and this run perturbs with none (methods: {', '.join(methods) or 'none'})")
        self.resolve_defaults(methods)

    @property
    def _resolved(self) -> frozenset[str]:
        """The settings :meth:`resolve_defaults` filled in (not given by the user)."""
        return frozenset(getattr(self, "_defaulted", ()))

    def resolve_defaults(self, methods: Sequence[str]) -> None:
        """Fill the unset constraints with their defaults for ``methods``: ``keep_pos`` on where one is
        word-level, ``synonym_senses="one"`` where one is W-synonym, ``radical_strokes="drop"`` where one is
        C-radical (each measured on hand-labelled edits, docs/perturbations.md). Unset where no method applies them, so a character-level run's identity
        stays as it was; a default filled for one set of methods is undone for another."""
        from robusteval.perturbations.registry import pos_applies

        resolved = set(self._resolved)
        for name, applies, value in (("keep_pos", any(pos_applies(m) for m in methods), True),
                                     ("synonym_senses", "W-synonym" in methods, "one"),
                                     ("radical_strokes", "C-radical" in methods, "drop")):
            if getattr(self, name) is None or name in resolved:
                object.__setattr__(self, name, value if applies else None)
                resolved.add(name)
        object.__setattr__(self, "_defaulted", frozenset(resolved))

    def budget(self, perturbation: Perturbation) -> ChangeBudget | None:
        """The method's default budget with any of rate/min_changes/max_changes applied; None: all unset."""
        if self.rate is None and self.min_changes is None and self.max_changes is None:
            return None
        default: ChangeBudget = getattr(perturbation, "default_budget", ChangeBudget())
        try:
            return ChangeBudget(
                rate=default.rate if self.rate is None else self.rate,
                minimum=default.minimum if self.min_changes is None else self.min_changes,
                maximum=default.maximum if self.max_changes is None else self.max_changes,
            )
        except ValueError as exc:
            # Only the method's default can clash with a set bound (max_changes below its default minimum).
            raise ConfigError(self, "max_changes" if self.max_changes is not None else "min_changes",
                              f"does not fit {perturbation.name}'s default change budget: {exc}") from exc
