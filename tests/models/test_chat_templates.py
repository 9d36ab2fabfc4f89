"""Chat templates on the generate/score path: the hf backend renders ``GenerationRequest.messages`` with the
tokenizer's template and caches the earlier turns exactly; the openai backend sends them to /chat/completions;
LLM judges have a chat form; the CLI records the openai endpoint."""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch

from helpers.servers import fake_openai_server
from robusteval.cli.common import add_backend_options, backend_options
from robusteval.errors import UserError
from robusteval.judges import REASONING, ReasoningItem, build_judge
from robusteval.judges.llm import CHAT_NO, CHAT_YES
from robusteval.judges.reasoning import ReasoningJudge
from robusteval.models import GenerationRequest, load_backend
from robusteval.models.hf import HFBackend
from robusteval.models.identity import describe_model
from robusteval.prompts.answer_first import DEFAULT_SYSTEM_PROMPT, AnswerFirstPrompt, default_exemplars

QUESTIONS = [
    "Tom has 3 apples and buys 4 more. How many apples does he have?",
    "A shelf holds 12 books. 5 are taken away. How many are left?",
    "Is 7 larger than 5?",
]
PROMPT = AnswerFirstPrompt(default_exemplars("number"))


def _copy(backend: HFBackend, *, template: str | bool | None = False, cache: bool = True) -> HFBackend:
    """Another backend on the same weights: without the prefix cache, or with another chat template."""
    tokenizer = backend.tokenizer
    if template is not False:
        tokenizer = copy.deepcopy(tokenizer)
        tokenizer.chat_template = template
    return HFBackend(backend.model, tokenizer, backend.name, batch_size=2, use_prefix_cache=cache)


def _requests(max_new_tokens: int = 10) -> list[GenerationRequest]:
    return [PROMPT.request(q, max_new_tokens=max_new_tokens, chat=True) for q in QUESTIONS]


def test_the_tiny_template_is_a_role_template_that_writes_bos(tiny_backend: Any) -> None:
    text = tiny_backend.chat_text(PROMPT.messages(QUESTIONS[0]))
    assert text.startswith("<s><|system|>\n" + DEFAULT_SYSTEM_PROMPT + "</s>\n<|user|>\n")
    assert text.endswith(f"<|user|>\n{QUESTIONS[0]}</s>\n<|assistant|>\n")
    assert tiny_backend.encode(text)[0] == tiny_backend.tokenizer.bos_token_id  # BOS from the template, once
    with pytest.raises(UserError, match="unknown chat role: tool"):
        tiny_backend.chat_text([{"role": "tool", "content": "x"}])


def test_messages_turn_exemplars_into_earlier_turns() -> None:
    messages = PROMPT.messages(f"  {QUESTIONS[0]} ", system_prompt="Be brief.")
    exemplars = PROMPT.exemplars.exemplars
    assert messages[0] == {"role": "system", "content": "Be brief."}
    assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * len(exemplars) + ["user"]
    assert messages[1]["content"] == exemplars[0].question
    assert messages[2]["content"].startswith(f"The answer is {exemplars[0].answer.rstrip('.')}. ")
    assert messages[-1] == {"role": "user", "content": QUESTIONS[0]}
    assert PROMPT.messages("q")[0]["content"] == DEFAULT_SYSTEM_PROMPT
    assert PROMPT.messages("q", system_prompt="")[0]["role"] == "user"  # '' = no system turn


def test_request_key_includes_the_messages_and_text_keys_are_unchanged() -> None:
    chat = PROMPT.request(QUESTIONS[0], max_new_tokens=7, chat=True)
    assert chat.key()["messages"] == PROMPT.messages(QUESTIONS[0]) and chat.prompt == chat.prefix == ""
    text = PROMPT.request(QUESTIONS[0], max_new_tokens=7)
    # Text requests key exactly as before chat existed (stored runs stay resumable).
    assert set(text.key()) == {"prompt", "max_new_tokens", "temperature", "top_p", "stop", "seed", "chat", "prefix"}
    assert text.prefix == PROMPT.prefix and text.prompt == PROMPT.question_prompt(QUESTIONS[0])
    other = PROMPT.request(QUESTIONS[0], max_new_tokens=7, chat=True, system_prompt="Be brief.")
    assert other.key() != chat.key()


def test_chat_generation_equals_generation_without_the_prefix_cache(tiny_backend: Any) -> None:
    requests = _requests()
    cached = [(g.text, g.n_tokens) for g in tiny_backend.generate(requests)]
    uncached = [(g.text, g.n_tokens) for g in _copy(tiny_backend, cache=False).generate(requests)]
    # And each conversation decoded alone from the ids of its whole rendering (no split at all).
    whole = []
    for request in requests:
        ids = tiny_backend.encode(tiny_backend.chat_text(request.messages))
        row = tiny_backend.decode_many([], [ids], max_new_tokens=10, stops=[request.stop])[0]
        whole.append((row.text, len(row.token_ids)))
    assert cached == uncached == whole
    assert all(n for _, n in cached)


def test_the_cached_prefix_is_the_exemplar_turns(tiny_backend: Any) -> None:
    messages = PROMPT.messages(QUESTIONS[0])
    head = tiny_backend.chat_prefix_text(messages)
    assert head == tiny_backend.chat_text(messages[:-1], add_generation_prompt=False)
    assert DEFAULT_SYSTEM_PROMPT in head and all(e.question in head for e in PROMPT.exemplars.exemplars)
    assert QUESTIONS[0] not in head and tiny_backend.chat_text(messages).startswith(head)
    prefixes = set()
    for question in QUESTIONS:
        prefix_ids, rest = tiny_backend.chat_ids(PROMPT.messages(question))
        assert prefix_ids + rest == tiny_backend.encode(tiny_backend.chat_text(PROMPT.messages(question)))
        prefixes.add(tuple(prefix_ids))
    # One prefix for every question: the exemplars are encoded (and their KV cached) once.
    assert prefixes == {tuple(tiny_backend.encode(head))}
    tiny_backend.generate(_requests(max_new_tokens=2))
    assert next(iter(prefixes)) in tiny_backend._prefixes
    # A question alone (no earlier turns) has nothing to cache.
    assert tiny_backend.chat_prefix_text([{"role": "user", "content": "hi"}]) == ""


# Like Mistral's: the system prompt is written into the *last* user turn.
MISTRAL_LIKE = (
    "{{ bos_token }}{% for m in messages if m['role'] != 'system' %}"
    "{% if m['role'] == 'user' %}[INST] {% if loop.last and messages[0]['role'] == 'system' %}"
    "{{ messages[0]['content'] }}\n\n{% endif %}{{ m['content'] }} [/INST]"
    "{% else %}{{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)
# Renders something about the whole conversation first, so no earlier turns are ever a prefix of it.
COUNTING = "{{ bos_token }}{{ messages | length }} turns\n{% for m in messages %}{{ m['content'] }}\n{% endfor %}"


@pytest.mark.parametrize("template", [MISTRAL_LIKE, COUNTING], ids=["system-in-last-turn", "no-clean-split"])
def test_other_templates_split_exactly_or_cache_nothing(tiny_backend: Any, template: str) -> None:
    other = _copy(tiny_backend, template=template)
    messages = PROMPT.messages(QUESTIONS[0])
    head = other.chat_prefix_text(messages)
    prefix_ids, rest = other.chat_ids(messages)
    assert prefix_ids + rest == other.encode(other.chat_text(messages))
    if template == COUNTING:
        assert head == "" and prefix_ids == []
    else:  # the exemplar turns are cached; the system prompt travels with the question
        assert head and DEFAULT_SYSTEM_PROMPT not in head and PROMPT.exemplars.exemplars[-1].rationale in head
        assert prefix_ids == other.encode(head)
    request = PROMPT.request(QUESTIONS[0], max_new_tokens=6, chat=True)
    (generated,) = other.generate([request])
    row = other.decode_many([], [prefix_ids + rest], max_new_tokens=6, stops=[request.stop])[0]
    assert (generated.text, generated.n_tokens) == (row.text, len(row.token_ids))


def test_chat_logprobs_equal_a_manual_forward_of_the_whole_conversation(tiny_backend: Any) -> None:
    messages = PROMPT.messages(QUESTIONS[1])
    scores = tiny_backend.continuation_logprobs("", ["1", "0", "12"], messages=messages)
    ids = tiny_backend.encode(tiny_backend.chat_text(messages))
    for continuation, score in zip(["1", "0", "12"], scores, strict=True):
        cont = tiny_backend.encode(continuation)
        with torch.no_grad():
            logits = tiny_backend.model(torch.tensor([ids + cont])).logits[0].float()
        logp = torch.log_softmax(logits[len(ids) - 1 : -1], dim=-1)
        expected = float(logp.gather(1, torch.tensor(cont)[:, None]).sum())
        assert score == pytest.approx(expected, abs=1e-4)
    # The text arguments are ignored when messages are given.
    assert tiny_backend.continuation_logprobs("ignored", ["1"], prefix="x", messages=messages)[0] == \
        pytest.approx(scores[0], abs=1e-5)


def test_a_model_without_a_chat_template_is_one_line(tiny_backend: Any) -> None:
    bare = _copy(tiny_backend, template=None)
    for call in (lambda: bare.generate(_requests(max_new_tokens=2)),
                 lambda: bare.continuation_logprobs("", ["1"], messages=PROMPT.messages("q")),
                 lambda: bare.chat_prefix_text(PROMPT.messages("q"))):
        with pytest.raises(UserError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and bare.name in message and "drop --chat" in message
    # Text prompts are unaffected.
    assert bare.generate([PROMPT.request(QUESTIONS[0], max_new_tokens=2)])[0].n_tokens


def test_llm_judge_chat_form_scores_the_reply_after_the_template(tiny_llama_dir: Path, tiny_backend: Any) -> None:
    item = ReasoningItem("What is 2 + 3?", "The answer is 5. 2 + 3 = 5.", "The answer is 5. 2 + 3 = 6.")
    judge = build_judge(f"hf:{tiny_llama_dir}", lambda spec: tiny_backend, task=REASONING, chat=True)
    assert isinstance(judge, ReasoningJudge) and judge.identity["chat"] is True
    assert judge.messages(item) == [{"role": "user", "content": judge.full_prompt(item)}]
    verdict = judge.judge([item])[0]
    lp_yes, lp_no = tiny_backend.continuation_logprobs("", [CHAT_YES, CHAT_NO], messages=judge.messages(item))
    assert json.loads(verdict.raw) == {"1": lp_yes, "0": lp_no} and verdict.label is (lp_yes > lp_no)
    # Unset: the raw prompt, and the identity (which keys cached verdicts) as before chat judges existed.
    assert ReasoningJudge(tiny_backend).identity["chat"] is None
    # Judges without a model take no chat setting.
    assert build_judge("arith", lambda spec: pytest.fail("no model"), chat=True).name == "arith"


def test_openai_backend_sends_messages_to_chat_completions(tmp_path: Path) -> None:
    messages = PROMPT.messages(QUESTIONS[0], system_prompt="Be brief.")
    with fake_openai_server(tmp_path, "ok") as srv:
        # The default endpoint is completions: a conversation still goes to chat, a text prompt does not.
        with load_backend(f"openai:fake@{srv.base_url}", max_retries=0) as be:
            chat, text = be.generate([GenerationRequest(max_new_tokens=50, messages=tuple(messages)),
                                      GenerationRequest("plain words", max_new_tokens=50)])
        seen = srv.requests()
    assert chat.meta["endpoint"] == "chat" and text.meta["endpoint"] == "completions"
    by_path = {r["path"]: r["body"] for r in seen}
    assert by_path["/v1/chat/completions"]["messages"] == messages
    assert by_path["/v1/completions"]["prompt"] == "plain words"
    assert chat.text.startswith("[") and QUESTIONS[0].split()[0] in chat.text


def test_endpoint_option_reaches_the_backend_and_the_model_identity() -> None:
    parser = argparse.ArgumentParser()
    add_backend_options(parser)
    assert "endpoint" not in backend_options(parser.parse_args([]))  # unset: the class's default
    options = backend_options(parser.parse_args(["--model-args", "endpoint=auto"]))
    assert options["endpoint"] == "auto"
    assert backend_options(parser.parse_args(["--endpoint", "auto"])) == options  # the replaced flag
    spec = "openai:m@http://127.0.0.1:1/v1"
    assert describe_model(spec, **options)["endpoint"] == "auto"
    assert describe_model(spec, **backend_options(parser.parse_args([])))["endpoint"] == "completions"
    with load_backend(spec, **options) as be:
        assert be.config.endpoint == "auto" and be.identity["endpoint"] == "auto"
    with pytest.raises(SystemExit):
        parser.parse_args(["--endpoint", "responses"])
    with pytest.raises(UserError, match=r"^--model-args: endpoint: 'responses' is not one of completions, chat, auto"):
        backend_options(parser.parse_args(["--model-args", "endpoint=responses"]))
