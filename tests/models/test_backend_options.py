"""Backend options declared once per backend (robusteval.models.options): load_model's keywords, --model-args, a
study's model keys and the identity all come from the options classes."""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import robusteval as rv
from robusteval.cli.common import add_backend_options, backend_options
from robusteval.config import validated
from robusteval.errors import UserError
from robusteval.models.base import Generation, GenerationRequest
from robusteval.models.hf_options import HFOptions
from robusteval.models.identity import describe_model, identity_key
from robusteval.models.openai_options import OpenAIOptions
from robusteval.models.options import CHANGED, CommonOptions, backend_option, option_fields, specific_fields
from robusteval.models.registry import (
    BACKENDS,
    ModelSpec,
    backend_options_classes,
    options_reference,
    parse_model_args,
    register_backend,
)

OPENAI = "openai:m@http://127.0.0.1:9/v1"
DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"


def parser() -> argparse.ArgumentParser:
    built = argparse.ArgumentParser()
    built.add_argument("--model")
    add_backend_options(built)
    return built


def test_model_args_are_typed_by_the_class_that_declares_them() -> None:
    parsed = parse_model_args("decoder=static, revision=abc,trust_remote_code=true,timeout=30,max_retries=none,"
                              "device_map=0,attn_implementation=sdpa,max_concurrency=64", kind="hf")
    assert parsed == {"decoder": "static", "revision": "abc", "trust_remote_code": True, "timeout": 30.0,
                      "max_retries": None, "device_map": 0, "attn_implementation": "sdpa", "max_concurrency": 64}
    assert isinstance(parsed["timeout"], float) and isinstance(parsed["max_concurrency"], int)
    # A TOML table (--config) is checked the same way.
    assert parse_model_args({"timeout": 5, "endpoint": "chat"}) == {"timeout": 5, "endpoint": "chat"}
    assert parse_model_args(None) == {} and parse_model_args("") == {}


@pytest.mark.parametrize(("text", "message"), [
    ("timout=3", r"^--model-args: unknown model option timout \(did you mean timeout\?\) for the openai backend; "
                 r"openai options: api_key_env, max_concurrency, timeout, "),
    ("timeout=soon", r"^--model-args: timeout: expected a number, got 'soon' \(openai backend\)$"),
    ("max_concurrency=2.5", r"^--model-args: max_concurrency: expected a whole number, got '2.5' \(openai backend\)$"),
    ("endpoint=chatt", r"^--model-args: endpoint: 'chatt' is not one of completions, chat, auto \(did you mean chat\?\)"),
    ("timeout", r"^--model-args: 'timeout' is not KEY=VALUE$"),
])
def test_a_bad_model_arg_is_one_line_naming_it_and_the_backend(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        backend_options(parser().parse_args(["--model", OPENAI, "--model-args", text]))


def test_an_option_of_another_backend_is_accepted_and_ignored_but_checked() -> None:
    """One option set fits every spec a command loads (a local model, an API judge)."""
    options = {"timeout": 5.0, "decoder": "dynamic", "device": "cpu"}
    hf = rv.models.registry.resolve_options("hf:/x", options)
    openai = rv.models.registry.resolve_options(OPENAI, options)
    assert isinstance(hf, HFOptions) and hf.decoder == "dynamic" and not hasattr(hf, "timeout")
    assert isinstance(openai, OpenAIOptions) and openai.timeout == 5.0 and not hasattr(openai, "decoder")
    with pytest.raises(UserError, match=r"^decoder: 'fast' is not one of auto, static, dynamic \(hf backend\)$"):
        rv.models.registry.resolve_options("hf:/x", {"decoder": "fast"})
    with pytest.raises(UserError, match=r"^timeout: expected a number, got '5' \(openai backend\)$"):
        rv.models.registry.resolve_options("hf:/x", {"timeout": "5"})
    with pytest.raises(UserError, match=r"^endpoint: 'responses' is not one of completions, chat, auto \(openai "
                       r"backend\)$"):
        rv.models.registry.resolve_options("hf:/x", {"endpoint": "responses"})
    with pytest.raises(UserError, match=r"^timeout: must be seconds > 0, got 0.0 \(openai backend\)$"):
        rv.models.registry.resolve_options(OPENAI, {"timeout": 0.0})


def test_a_replaced_flag_still_works_with_a_notice_and_is_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    built = parser()
    old = backend_options(built.parse_args(["--model", OPENAI, "--request-timeout", "30", "--api-logprobs", "off"]))
    notices = capsys.readouterr().err.strip().splitlines()
    assert notices == [
        "robusteval: --request-timeout is deprecated (accepted until the next release): use --model-args timeout=30",
        "robusteval: --api-logprobs is deprecated (accepted until the next release): use --model-args logprobs=off",
    ]
    new = backend_options(built.parse_args(["--model", OPENAI, "--model-args", "timeout=30,logprobs=off"]))
    assert old == new and new["timeout"] == 30.0 and new["logprobs"] == "off"
    assert capsys.readouterr().err == ""  # --model-args says nothing
    text = built.format_help()
    assert "--model-args" in text
    for flag in ("--request-timeout", "--api-logprobs", "--endpoint", "--max-concurrency", "--decoder",
                 "--api-key-env", "--retry-for", "--reasoning-effort", "--max-tokens-field"):
        assert flag not in text, flag
    # --model-args wins over the flag it replaces.
    both = backend_options(built.parse_args(["--request-timeout", "30", "--model-args", "timeout=9"]))
    assert both["timeout"] == 9.0


def test_the_identity_is_derived_and_stays_what_it_was() -> None:
    """Identities of runs made before the options classes: the same dicts, the same keys (pinned from before)."""
    assert describe_model(OPENAI) == {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                                      "endpoint": "completions"}
    assert identity_key(describe_model(OPENAI)) == "openai:3d11bb36abd57780caf3"
    # Options that do not change outputs leave it alone; a default given explicitly is the default.
    assert identity_key(describe_model(OPENAI, max_tokens_field="max_tokens", dtype="bfloat16", device="cuda",
                                       timeout=3.0, logprobs="off")) == "openai:3d11bb36abd57780caf3"
    assert identity_key(describe_model(OPENAI, endpoint="chat", timeout=5.0, logprobs="off", retry_for=3.0)
                        ) == "openai:e68d246cdf7897cfdcab"
    reasoning = describe_model(OPENAI, reasoning_effort="high", thinking="off",
                               max_tokens_field="max_completion_tokens")
    assert identity_key(reasoning) == "openai:aab32c61aa2c2436acc1"
    assert reasoning["reasoning_effort"] == "high" and reasoning["max_tokens_field"] == "max_completion_tokens"
    hub = describe_model("hf:some/hub-id", device="cpu", revision="v2", low_cpu_mem_usage=False)
    assert hub == {"backend": "hf", "source": "some/hub-id", "revision": "v2", "dtype": "float32", "device": "cpu",
                   "model_args": {"low_cpu_mem_usage": False, "revision": "v2"}}
    # The old form of hf's from_pretrained options gives the same identity.
    assert describe_model("hf:some/hub-id", device="cpu", model_args={"revision": "v2", "low_cpu_mem_usage": False}
                          ) == hub
    with pytest.raises(UserError, match=r"model_args: unknown key\(s\) revison; hf accepts revision, "):
        describe_model("hf:some/hub-id", model_args={"revison": "v2"})


def test_a_real_load_takes_the_hf_options(tiny_llama_dir: Path) -> None:
    options = backend_options(parser().parse_args([
        "--model", f"hf:{tiny_llama_dir}", "--device", "cpu", "--batch-size", "3",
        "--model-args", "decoder=dynamic,prefix_cache=false,timeout=9"]))
    backend: Any = rv.load_model(f"hf:{tiny_llama_dir}", **options)
    assert backend.batch_size == 3 and backend.use_prefix_cache is False and backend.decoder == "dynamic"
    assert backend.identity == describe_model(f"hf:{tiny_llama_dir}", device="cpu")  # none of them in it
    out = backend.generate([GenerationRequest("one two", max_new_tokens=2)])
    assert len(out) == 1 and out[0].finish_reason in ("stop", "length")


# ------------------------------------------------------------------------------ a third backend, in one place
@validated
@dataclasses.dataclass(frozen=True)
class EchoOptions(CommonOptions):
    """A backend that repeats its prompt (the test's third backend)."""

    repeat: int = backend_option(1, identity=CHANGED, replaces="--echo-repeat", help="times the prompt is repeated")
    shout: bool = backend_option(False, help="upper-case the reply")


class EchoBackend:
    capabilities = frozenset({"generate"})

    def __init__(self, spec: ModelSpec, options: EchoOptions) -> None:
        self.name, self.options = f"echo:{spec.target}", options

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        texts = [r.full_prompt * self.options.repeat for r in requests]
        return [Generation(t.upper() if self.options.shout else t, "stop") for t in texts]


def test_a_third_backend_is_its_options_class_and_one_registration(capsys: pytest.CaptureFixture[str]) -> None:
    with BACKENDS.scoped():
        register_backend("echo", options=EchoOptions)(EchoBackend)
        assert backend_options_classes()["echo"] is EchoOptions
        built = parser()  # its replaced flag is there, hidden
        options = backend_options(built.parse_args(["--model", "echo:x", "--model-args", "repeat=2,shout=true"]))
        assert options["repeat"] == 2 and options["shout"] is True
        backend: Any = rv.load_model("echo:x", **options)
        assert [g.text for g in backend.generate([GenerationRequest("ab")])] == ["ABAB"]
        assert backend.identity == {"backend": "echo", "target": "x", "repeat": 2}
        assert describe_model("echo:x") == {"backend": "echo", "target": "x"}  # the default is not recorded
        assert backend_options(built.parse_args(["--echo-repeat", "3"]))["repeat"] == 3
        assert "use --model-args repeat=3" in capsys.readouterr().err
        with pytest.raises(UserError, match=r"^--model-args: unknown model option shoot \(did you mean shout\?\) "
                           r"for the echo backend; echo options: repeat, shout$"):
            backend_options(built.parse_args(["--model", "echo:x", "--model-args", "shoot=true"]))
        with pytest.raises(UserError, match=r"^load_model\(\): repeat: expected a whole number, got '2' "
                           r"\(echo backend\)$"):
            rv.load_model("echo:x", repeat="2")
        assert "| `repeat` | int | `1` | when not the default | `--echo-repeat` |" in options_reference()
    with pytest.raises(UserError, match="unknown model option repeat"):
        parse_model_args("repeat=2", kind="hf")  # gone with its backend


# ------------------------------------------------------------------------------ declared, not spelled again
def test_every_option_is_declared_once_and_the_doc_lists_them_all() -> None:
    text = DOC.read_text(encoding="utf-8")
    block = re.search(r"<!-- options-reference: start -->\n(.*)<!-- options-reference: end -->", text, re.S)
    assert block is not None and block[1] == options_reference(), "regenerate docs/backends.md's tables"
    for kind, cls in backend_options_classes().items():
        for name in option_fields(cls):
            assert f"| `{name}` |" in block[1], (kind, name)
    # No option is declared by two backends with different meanings: only the common ones are shared.
    specific = [set(specific_fields(cls)) for cls in backend_options_classes().values()]
    assert not set.intersection(*specific)


# ------------------------------------------------------------------------------ a study's model keys
def test_a_study_takes_the_same_names_and_refuses_on_the_right_line(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_text('{"question": "1+1?", "answer": "2"}\n', encoding="utf-8")
    tail = "[datasets.q]\ndataset = 'jsonl'\ndata_file = 'q.jsonl'\n[methods.eval]\n"
    study = tmp_path / "study.toml"
    study.write_text(f"[[models]]\nspec = '{OPENAI}'\ndevice = 'cpu'\ntimeout = 30\nendpoint = 'chat'\n"
                     f"[[models]]\nspec = 'hf:some/hub-id'\nname = 'hub'\ndecoder = 'dynamic'\nrevision = 'v2'\n{tail}")
    models = rv.load_study(study).models
    assert models[0].options == {"device": "cpu", "timeout": 30, "endpoint": "chat"}
    assert models[1].options == {"decoder": "dynamic", "revision": "v2"}
    study.write_text(f"[[models]]\nspec = '{OPENAI}'\ndevice = 'cpu'\ntimeout = 'soon'\n{tail}")
    with pytest.raises(UserError, match=r"study.toml:4: models\[0\]: timeout: expected a number, got 'soon' "
                       r"\(openai backend\)$"):
        rv.load_study(study)
    study.write_text(f"[[models]]\nspec = 'hf:some/hub-id'\ndevice = 'cpu'\ndecodr = 'dynamic'\n{tail}")
    with pytest.raises(UserError, match=r"study.toml:4: models\[0\]: unknown model option decodr \(did you mean "
                       r"decoder\?\) for the hf backend"):
        rv.load_study(study)
