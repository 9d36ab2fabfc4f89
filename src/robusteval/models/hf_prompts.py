"""Prompt layout of the ``hf:`` backend: plain prompts after a prefix, and chat conversations, as token ids.

Chat requests (``GenerationRequest.messages``) are rendered with the tokenizer's chat template and tokenised as
one text without added special tokens (templates write BOS themselves). The cached prefix is then the earlier
turns (system prompt, exemplar question/answer pairs): they are rendered alone, and used as the prefix when the
full rendering starts with them (:meth:`HFPromptLayout.chat_prefix_text`); the split is made on the ids of the
full text, so the cached and uncached parts always concatenate to exactly the ids of the whole conversation.
:class:`HFPromptLayout` is the part of :class:`~robusteval.models.hf.HFBackend` that does this; the backend's
``__init__`` sets the attributes declared here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from robusteval.errors import BackendError, UserError
from robusteval.models.base import GenerationRequest, Message, freeze_messages
from robusteval.models.tokenization import split_by_offsets, tokenize_with_offsets

HARMONY_CHANNEL = "<|channel|>"
#: gpt-oss's harmony markers: kept when decoding, so a generation's analysis and final channels can be told apart.
HARMONY_MARKERS = ("<|start|>", HARMONY_CHANNEL, "<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|constrain|>")


class HFPromptLayout:
    """Token ids of plain prompts and of chat conversations, split into a cached prefix and the rest."""

    # Set by HFBackend.__init__.
    tokenizer: Any
    name: str
    bos_ids: list[int]
    chat_template_kwargs: dict[str, Any]
    _token_cache: dict[str, list[int]]
    _split_cache: dict[str, tuple[list[int], list[int]]]
    _chat_cache: dict[tuple[Any, ...], str]

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without special tokens (memoised: exemplar texts repeat)."""
        ids = self._token_cache.get(text)
        if ids is None:
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(self._token_cache) < 100_000:
                self._token_cache[text] = ids
        return list(ids)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` without special tokens, but for the channel markers of a harmony model (gpt-oss):
        its analysis and final channels are told apart by them (:mod:`robusteval.text.thinking`)."""
        kept = self.kept_special_ids
        if not kept:
            return self.tokenizer.decode(list(ids), skip_special_tokens=True)
        dropped = self._special_ids
        return self.tokenizer.decode([i for i in ids if i in kept or i not in dropped], skip_special_tokens=False)

    @property
    def kept_special_ids(self) -> frozenset[int]:
        """The special tokens :meth:`decode` keeps: harmony's markers where the chat template is harmony's."""
        kept = self.__dict__.get("_kept_special")
        if kept is None:
            kept = self.__dict__["_kept_special"] = harmony_marker_ids(self.tokenizer)
        return frozenset(kept)

    @property
    def _special_ids(self) -> frozenset[int]:
        found = self.__dict__.get("_all_special")
        if found is None:
            added = getattr(self.tokenizer, "added_tokens_decoder", {}) or {}
            found = frozenset({i for i, token in added.items() if getattr(token, "special", False)}
                              | set(self.tokenizer.all_special_ids))
            self.__dict__["_all_special"] = found
        return frozenset(found)

    def prompt_ids(self, prefix: str, prompt: str) -> tuple[list[int], list[int]]:
        """(prefix ids incl. BOS, prompt ids): ``prefix + prompt`` tokenised as ONE string and split at the
        boundary, so the model reads exactly the whole prompt's tokens (tokenising the parts separately adds a
        space marker at the start of the prompt with SentencePiece tokenizers that prepend one)."""
        if not prefix:
            return list(self.bos_ids), self.encode(prompt)
        key = prefix + "\x00" + prompt
        cached = self._split_cache.get(key)
        if cached is None:
            try:
                ids, offsets = tokenize_with_offsets(self.tokenizer, prefix + prompt)
            except UserError:  # a slow tokenizer without offsets: separate segments, as before
                return self.bos_ids + self.encode(prefix), self.encode(prompt)
            head, rest = split_by_offsets(ids, offsets, [len(prefix)])
            cached = (head, rest)
            if len(self._split_cache) < 100_000:
                self._split_cache[key] = cached
        return self.bos_ids + list(cached[0]), list(cached[1])

    # ------------------------------------------------------------------ chat templates
    def _require_chat_template(self) -> None:
        if not getattr(self.tokenizer, "chat_template", None):
            raise UserError(f"{self.name}: this model's tokenizer has no chat template, so it cannot be prompted "
                            "as a chat; drop --chat (or --judge-chat, for a judge; a base model is prompted with plain text)")

    def chat_text(self, messages: Sequence[Message], *, add_generation_prompt: bool = True) -> str:
        """``messages`` rendered by the tokenizer's chat template (by default ending with the assistant's
        header, where the reply starts). Tokenise the result with ``add_special_tokens=False``."""
        self._require_chat_template()
        frozen = freeze_messages(messages)
        key = (tuple((m["role"], m["content"]) for m in frozen), add_generation_prompt)
        text = self._chat_cache.get(key)
        if text is None:
            try:
                text = self.tokenizer.apply_chat_template(
                    [dict(m) for m in frozen], tokenize=False, add_generation_prompt=add_generation_prompt,
                    **self.chat_template_kwargs,
                )
            except Exception as exc:  # jinja2 errors, raise_exception() in a template ("roles must alternate")
                if not _template_error(exc):
                    raise
                detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
                # Some templates (Gemma's) refuse a system turn: say how to leave it out.
                hint = "; --system-prompt '' leaves out the system turn" if "system" in detail.lower() else ""
                raise UserError(f"{self.name}: the chat template cannot render this conversation "
                                f"({detail}){hint}") from None
            if not isinstance(text, str):
                raise BackendError(f"{self.name}: apply_chat_template returned {type(text).__name__}, not text")
            if len(self._chat_cache) >= 10_000:  # exemplar prefixes repeat; questions do not
                self._chat_cache.pop(next(iter(self._chat_cache)))
            self._chat_cache[key] = text
        return text

    def chat_prefix_text(self, messages: Sequence[Message]) -> str:
        """The part of :meth:`chat_text` that comes from the turns before the final user turn (system prompt,
        exemplars): what is identical for every question and so cached. "" when there are no earlier turns or
        the template renders them differently once a question follows (then nothing is cached)."""
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        if not users or users[-1] == 0:
            self._require_chat_template()
            return ""
        full = self.chat_text(messages)
        try:
            head = self.chat_text(messages[: users[-1]], add_generation_prompt=False)
        except UserError:  # e.g. a template that insists the conversation ends with a user turn
            return ""
        return head if full.startswith(head) else ""

    def chat_ids(self, messages: Sequence[Message]) -> tuple[list[int], list[int]]:
        """(cached prefix ids, the rest) of the rendered conversation; together exactly the ids of the whole."""
        ids = self.encode(self.chat_text(messages))
        head = self.chat_prefix_text(messages)
        split = 0
        if head:
            # Cut the *full* ids where they stop agreeing with the head's own ids: exact whatever the tokenizer
            # does at the boundary (a token spanning it simply stays in the uncached part).
            for a, b in zip(self.encode(head), ids, strict=False):
                if a != b:
                    break
                split += 1
        split = min(split, len(ids) - 1)  # at least one token after the cache: it predicts the reply
        return ids[: max(split, 0)], ids[max(split, 0) :]

    def request_ids(self, request: GenerationRequest) -> tuple[list[int], list[int]]:
        """(prefix ids, the rest) of a request: its conversation when it has one, else ``prefix + prompt``; then
        the text its reply already holds (``reply_prefix``)."""
        if request.messages:
            prefix, rest = self.chat_ids(request.messages)
            return prefix, rest + (self.encode(request.reply_prefix) if request.reply_prefix else [])
        return self.prompt_ids(request.prefix, request.prompt + request.reply_prefix)


def harmony_marker_ids(tokenizer: Any) -> frozenset[int]:
    """The ids of harmony's markers (``<|channel|>``, ``<|message|>``, ``<|start|>``, ``<|end|>``, ...) where the
    tokenizer's chat template writes harmony's channels (gpt-oss); empty for every other tokenizer."""
    template = getattr(tokenizer, "chat_template", None)
    if not (isinstance(template, str) and HARMONY_CHANNEL in template):
        return frozenset()
    vocab = tokenizer.get_vocab()
    return frozenset(vocab[marker] for marker in HARMONY_MARKERS if marker in vocab)


def _template_error(exc: Exception) -> bool:
    """Whether ``exc`` comes from rendering a chat template (jinja2), as opposed to a failure of our own."""
    try:
        from jinja2 import TemplateError
    except ImportError:  # pragma: no cover - transformers needs jinja2 for chat templates
        return False
    return isinstance(exc, TemplateError | ValueError | TypeError)
