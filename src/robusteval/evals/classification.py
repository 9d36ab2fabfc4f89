"""LLMs as text classifiers: a project-written prompt template, a hard label read from the generation and,
when the backend can score continuations, a soft label from the label log-probabilities.

Every query goes through the run store keyed by (model, prompt, mode), so identical texts across perturbed
sets or attack steps are asked once, and a killed run resumes with its answers intact.

With ``chat`` the template's text (instructions, demonstrations, the item) is one user turn, after an optional
system turn, rendered by the model's chat template; the label is the start of the assistant's reply, and soft
labels score the verbalizers there (no leading space: nothing separates them from the assistant header).
"""

from __future__ import annotations

import json
import math
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from robusteval.config import did_you_mean
from robusteval.data.example import Example
from robusteval.data.example import example_fields as example_fields  # re-exported: moved down to data
from robusteval.data.example import with_fields as with_fields
from robusteval.errors import DataError, UserError
from robusteval.models import Backend, GenerationRequest
from robusteval.models.base import Generation, Message, can_score, scoring_note
from robusteval.models.identity import backend_key
from robusteval.prompts.chat import check_chat_options, conversation, resolve_system_prompt
from robusteval.seeding import derive_seed
from robusteval.store import RunStore, canonical_json, unit_key
from robusteval.store.stages import register_stage
from robusteval.text.thinking import (
    NO_THINKING,
    ReasoningOptions,
    chat_prompt_opens,
    closing_prefix,
    read_output,
)

STAGE = register_stage("classify", cache=True, summary="classifier answers")
# sampled labels (the word-importance attack's sampling confidence)
SAMPLE_STAGE = register_stage("classify_sample", cache=True, summary="sampled classifier labels")
BUILTIN_TEMPLATES = {"nli-zh": "nli_zh.json", "text": "text.json", "yesno": "yesno.json"}
# What the generation is cut at: a label is one short line.
_STOP = ("\n",)
_MAX_NEW_TOKENS = 8
THINKING_BUDGET = 2048


@dataclass(frozen=True)
class ClassificationTemplate:
    """How to ask a model for a label.

    ``labels`` maps each gold label to the words accepted in a generation (the label itself first);
    ``verbalizers`` is the word scored for soft labels; ``prompt`` and ``prefix`` are ``string.Template``
    texts over the example's text fields (``$text``/``$premise`` = the question, ``$hypothesis``, any meta key)
    and ``$label_list``. ``text_fields`` are the fields perturbations and attacks may change.
    """

    name: str
    labels: Mapping[str, tuple[str, ...]]
    verbalizers: Mapping[str, str]
    prefix: str
    prompt: str
    text_fields: tuple[str, ...]
    source_sha: str = ""
    description: str = ""

    @classmethod
    def load(cls, source: str, labels: Sequence[str] | None = None) -> ClassificationTemplate:
        """A built-in template name (``nli-zh``, ``text``) or a JSON file; ``labels`` fills an empty label map."""
        check_template_source(source)
        if source in BUILTIN_TEMPLATES:
            text = resources.files("robusteval.prompts.classification").joinpath(BUILTIN_TEMPLATES[source]).read_text(
                "utf-8"
            )
            path = f"<built-in {source}>"
        else:
            file = Path(source)
            text = file.read_text("utf-8")
            path = str(file)
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from exc
        return cls.from_dict(data, path, labels)

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], path: str, labels: Sequence[str] | None = None
    ) -> ClassificationTemplate:
        for key in ("prompt", "text_fields"):
            if key not in data:
                raise DataError(path, "missing field", field=key)
        label_words = {str(k): tuple(str(w) for w in v) for k, v in dict(data.get("labels") or {}).items()}
        if not label_words:
            if not labels:
                raise DataError(path, "the template names no labels and the dataset gave none", field="labels")
            label_words = {label: (label,) for label in labels}
        for label, words in label_words.items():
            if not words:
                raise DataError(path, f"label '{label}' has no accepted words", field="labels")
        verbalizers = {label: str(dict(data.get("verbalizers") or {}).get(label, words[0]))
                       for label, words in label_words.items()}
        for key in ("prefix", "prompt"):
            _check_template(str(data.get(key, "")), path, key)
        return cls(
            name=str(data.get("name", Path(path).stem)),
            labels=label_words,
            verbalizers=verbalizers,
            prefix=str(data.get("prefix", "")),
            prompt=str(data["prompt"]),
            text_fields=tuple(str(f) for f in data["text_fields"]),
            source_sha=unit_key(canonical_json(dict(data)), sorted(label_words)),
            description=str(data.get("description", "")),
        )

    # ------------------------------------------------------------------ prompts
    @property
    def label_words(self) -> list[str]:
        """Every word accepted for some label (what perturbations must not change in the text)."""
        return [word for words in self.labels.values() for word in words]

    @property
    def label_list(self) -> str:
        return ", ".join(self.verbalizers.values())

    def filled_prefix(self) -> str:
        return string.Template(self.prefix).safe_substitute(label_list=self.label_list)

    def filled_prompt(self, fields: Mapping[str, str]) -> str:
        try:
            return string.Template(self.prompt).substitute({**fields, "label_list": self.label_list})
        except KeyError as exc:
            raise UserError(f"template '{self.name}' needs the field ${exc.args[0]}, which the example lacks") from exc

    def messages(self, fields: Mapping[str, str], system_prompt: str | None = None) -> list[Message]:
        """The chat form: [system] + one user turn holding the filled prefix and prompt. ``system_prompt``: None
        or "" = no system turn (the template's own text carries the instructions)."""
        text = (self.filled_prefix() + self.filled_prompt(fields)).strip()
        return conversation(text, system=resolve_system_prompt(system_prompt, None))

    def parse(self, generation: str) -> str | None:
        """The label whose accepted word appears first in the generation (case-insensitive), else None."""
        lowered = generation.lower()
        best: tuple[int, int, str] | None = None
        for label, words in self.labels.items():
            for word in words:
                at = lowered.find(word.lower())
                # Earliest match wins; at the same offset the longer word (e.g. "neutral" vs "neu").
                if at != -1 and (best is None or (at, -len(word)) < best[:2]):
                    best = (at, -len(word), label)
        return best[2] if best else None

    def identity(self) -> dict[str, Any]:
        return {"template": self.name, "template_sha": self.source_sha}


def check_template_source(source: str | None) -> None:
    """Refuse a template that is neither a built-in name nor a file (the closest built-in suggested); None (the
    dataset's default) passes. Cheap: configs call it when built, before any model loads."""
    if source is None or source in BUILTIN_TEMPLATES or Path(source).is_file():
        return
    raise UserError(f"template {source}: no such file and not a built-in template ({', '.join(BUILTIN_TEMPLATES)})"
                    f"{did_you_mean(source, BUILTIN_TEMPLATES)}")


def template_for(source: str | None, dataset: str, examples: Sequence[Example]) -> ClassificationTemplate:
    """The template ``source`` (default: ``nli-zh`` for OCNLI, ``yesno`` for yes/no labels, else ``text``),
    checked to name every label of ``examples``."""
    labels = sorted({ex.answer for ex in examples})
    default = "nli-zh" if dataset == "ocnli" else "yesno" if set(labels) <= {"yes", "no"} else "text"
    template = ClassificationTemplate.load(source or default, labels)
    unknown = sorted(set(labels) - set(template.labels))
    if unknown:
        raise UserError(f"template '{template.name}' has no label for dataset labels: {', '.join(unknown)}")
    return template


def _check_template(text: str, path: str, key: str) -> None:
    if not string.Template(text).is_valid():
        raise DataError(path, "invalid $placeholder (use $name or ${name}; $$ for a dollar sign)", field=key)


@dataclass
class LabelClassifier:
    """A backend asked for labels through a template, with every answer cached in ``store``.

    ``soft``: also score each label's verbalizer (needs the LOGPROBS capability); None = when available.
    ``chat``: ask through the model's chat template (:meth:`ClassificationTemplate.messages`, with
    ``system_prompt``). ``queries`` counts the model calls actually made (cache hits are free), for query budgets.
    """

    backend: Backend
    template: ClassificationTemplate
    store: RunStore | None = None
    soft: bool | None = None
    chat: bool = False
    system_prompt: str | None = None
    #: Tokens a thinking model may spend on its trace before the label (None: :data:`THINKING_BUDGET` where its
    #: chat template names think tags); given, also for a model whose thinking no template announces (an API).
    thinking_budget: int | None = None
    queries: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        check_chat_options(self.chat, self.system_prompt)
        # A reasoning model, asked through its chat template, writes a trace before its label: the label is read
        # from the reply (hard) or scored after the trace is closed (soft). Without a template nothing changes.
        self.reasoning = ReasoningOptions().resolve(self.backend) if self.chat else NO_THINKING
        self._opens: bool | None = None
        # Asked only when soft labels may be wanted: an API backend learns it from its server.
        scores = self.soft is not False and can_score(self.backend)
        if self.soft and not scores:
            raise UserError(
                f"soft labels need a backend that scores continuations; {self.backend.name} returns text only"
                f"{scoring_note(self.backend)} (use hard labels)"
            )
        self.soft = scores if self.soft is None else self.soft
        self._prefix = self.template.filled_prefix()
        self._model_key = backend_key(self.backend)  # changes with the weights, dtype, device...

    @property
    def _prompt_opens(self) -> bool:
        """Whether the chat template's generation prompt opens the trace (R1-distill); asked on first use, where
        the classifier runs."""
        if self._opens is None:
            self._opens = chat_prompt_opens(self.backend, self.reasoning)
        return self._opens

    def identity(self) -> dict[str, Any]:
        chat = {"chat": True, "system_prompt": self.system_prompt} if self.chat else {}
        thinking = ({"thinking": self.reasoning.record(), "thinking_budget": self._trace_budget()}
                    if self.reasoning.thinks else
                    {"thinking_budget": self.thinking_budget} if self.thinking_budget is not None else {})
        return {"model": self.backend.name, **self.template.identity(), "soft": self.soft, **chat, **thinking}

    def _trace_budget(self) -> int:
        """The tokens added to a chat request's budget for the trace (0 where none is expected)."""
        if self.thinking_budget is not None:
            return self.thinking_budget
        return THINKING_BUDGET if self.reasoning.thinks else 0

    def request(self, fields: Mapping[str, str], *, temperature: float = 0.0, seed: int | None = None
                ) -> GenerationRequest:
        """The request asking for ``fields``' label: the filled prompt after the template's prefix, or the chat."""
        if self.chat:
            # A trace has newlines: a thinking model's label line is cut from its reply instead (read_label).
            thinks = self.reasoning.thinks
            return GenerationRequest(max_new_tokens=_MAX_NEW_TOKENS + self._trace_budget(),
                                     temperature=temperature, stop=() if thinks else _STOP, seed=seed, chat=True,
                                     messages=tuple(self.template.messages(fields, self.system_prompt)))
        return GenerationRequest(self.template.filled_prompt(fields), _MAX_NEW_TOKENS, temperature=temperature,
                                 stop=_STOP, seed=seed, prefix=self._prefix)

    def _asked(self, fields: Mapping[str, str]) -> Any:
        """What an answer is keyed by: the filled prompt (text prompts keep their keys), or the whole request
        with its messages in a chat."""
        return self.request(fields).key() if self.chat else self.template.filled_prompt(fields)

    def key(self, fields: Mapping[str, str]) -> str:
        return unit_key(STAGE, self._model_key, self.template.source_sha, bool(self.soft), self._asked(fields))

    def cached(self, fields: Mapping[str, str]) -> dict[str, Any] | None:
        return self.store.get(STAGE, self.key(fields)) if self.store is not None else None

    def classify(self, items: Sequence[Mapping[str, str]], *, example_ids: Sequence[str] | None = None
                 ) -> list[dict[str, Any]]:
        """One record per item: ``label`` (hard, or None when unreadable), ``generation``, ``probs`` (soft)."""
        keys = [self.key(fields) for fields in items]
        out: list[dict[str, Any] | None] = [self.store.get(STAGE, key) if self.store else None for key in keys]
        todo: dict[str, int] = {}
        for i, (key, record) in enumerate(zip(keys, out, strict=True)):
            if record is None and key not in todo:
                todo[key] = i
        if todo:
            indices = list(todo.values())
            computed = self.query([items[i] for i in indices])
            for i, record in zip(indices, computed, strict=True):
                if self.store is not None:
                    self.store.put(STAGE, keys[i], record, example_id=example_ids[i] if example_ids else None)
                out[i] = record
            for i, key in enumerate(keys):
                if out[i] is None:
                    out[i] = out[todo[key]]
        return [record for record in out if record is not None]

    def sample_labels(
        self, items: Sequence[Mapping[str, str]], *, n: int, temperature: float, seed: int = 0
    ) -> list[list[str | None]]:
        """``n`` sampled labels per item, cached like everything else (stage :data:`SAMPLE_STAGE`).

        The i-th sample of every item uses the same seed (common random numbers), so comparing two texts'
        label frequencies is not blurred by independent sampling noise.
        """
        seeds = [derive_seed(seed, "classify-sample", i) for i in range(n)]
        keys = [unit_key(SAMPLE_STAGE, self._model_key, self.template.source_sha, self._asked(fields),
                         temperature, seeds)
                for fields in items]
        stored: dict[str, Any] = ({key: self.store.get(SAMPLE_STAGE, key) for key in keys}
                                  if self.store is not None else {})
        missing = list(dict.fromkeys(k for k in keys if stored.get(k) is None))
        if missing:  # every sample of every missing item in one generate call
            fields_of = dict(zip(keys, items, strict=True))
            requests = [self.request(fields_of[key], temperature=temperature, seed=s) for key in missing for s in seeds]
            outputs = self.backend.generate(requests)
            texts = [g.text for g in outputs]
            self.queries += len(requests)
            for j, key in enumerate(missing):
                chunk = texts[j * n : (j + 1) * n]
                labels = [self.read_label(g)["label"] for g in outputs[j * n : (j + 1) * n]]
                stored[key] = {"labels": labels, "generations": chunk}
                if self.store is not None:
                    self.store.put(SAMPLE_STAGE, key, stored[key])
        return [list(stored[key]["labels"]) for key in keys]

    def query(self, items: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
        """Ask the model about every item (no cache lookup); each item counts as one query."""
        generations = self.backend.generate([self.request(fields) for fields in items])
        self.queries += len(items)
        records = []
        for fields, generation in zip(items, generations, strict=True):
            record: dict[str, Any] = {**self.read_label(generation), "generation": generation.text}
            if self.soft:
                record.update(self._soft(fields))
            records.append(record)
        return records

    def read_label(self, generation: Generation) -> dict[str, Any]:
        """``{"label": ...}`` read from a generation: from the first line of a thinking model's reply (with
        ``thinking``, ``reply`` and ``thinking_truncated`` kept; a trace never closed gives no label), else from
        the whole text as always."""
        if not (self.reasoning.thinks or "thinking" in generation.meta):
            return {"label": self.template.parse(generation.text)}
        split, kept = read_output(generation.text, generation.meta, self.reasoning, opened=self._prompt_opens)
        line = split.reply.split("\n", 1)[0]
        return {"label": None if split.truncated else self.template.parse(line), **kept}

    def _soft(self, fields: Mapping[str, str]) -> dict[str, Any]:
        labels = list(self.template.verbalizers)
        score = self.backend.continuation_logprobs  # type: ignore[attr-defined]
        if self.chat:  # the reply starts right after the assistant header (a thinking model's trace closed first)
            closed = closing_prefix(self.reasoning, self._prompt_opens)
            words = [closed + self.template.verbalizers[label] for label in labels]
            logprobs = score("", words, messages=self.template.messages(fields, self.system_prompt))
        else:
            words = [" " + self.template.verbalizers[label] for label in labels]
            logprobs = score(self.template.filled_prompt(fields), words, prefix=self._prefix)
        top = max(logprobs)
        weights = [math.exp(lp - top) for lp in logprobs]
        total = sum(weights)
        probs = {label: w / total for label, w in zip(labels, weights, strict=True)}
        return {
            "label_logprobs": dict(zip(labels, logprobs, strict=True)),
            "probs": probs,
            "soft_label": max(probs, key=lambda label: probs[label]),
        }


def predicted_label(record: Mapping[str, Any], mode: str) -> str | None:
    """The hard label (read from the generation) or the soft one (argmax of label log-probs)."""
    return record.get("soft_label") if mode == "soft" else record.get("label")
