"""``load_model``'s typed keywords (:mod:`robusteval.models.load_options`) are generated from the backends' options
classes and cannot drift from them (issue 38, item 4); what they admit, the run-time check admits."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from pathlib import Path

import pytest

from robusteval.config import validated
from robusteval.models import load_options
from robusteval.models.hf_options import HFOptions
from robusteval.models.load_options_gen import TARGET, load_options_source, typed_dict_name
from robusteval.models.options import backend_option, option_fields
from robusteval.models.registry import LEGACY_MODEL_ARGS, builtin_options_classes, resolve_options


def test_the_module_is_what_the_generator_writes() -> None:
    assert Path(load_options.__file__) == TARGET
    assert TARGET.read_text(encoding="utf-8") == load_options_source(), (
        "regenerate: python -m robusteval.models.load_options_gen")


def _keys(typed_dict: type) -> set[str]:
    return set(typed_dict.__optional_keys__) | set(typed_dict.__required_keys__)  # type: ignore[attr-defined]


def test_every_option_of_every_builtin_backend_is_a_keyword_of_its_type() -> None:
    everything: set[str] = set()
    for kind, options_type in builtin_options_classes().items():
        typed_dict = getattr(load_options, typed_dict_name(options_type))
        assert _keys(typed_dict) == set(option_fields(options_type)), kind
        assert not typed_dict.__required_keys__, kind  # every keyword may be left out
        hints = typing.get_type_hints(typed_dict)
        for name, field in option_fields(options_type).items():
            declared = typing.get_type_hints(options_type)[name]
            choices = field.metadata.get("choices")
            if choices:  # a Literal of the choices (and None where the option may be None)
                literal = [arg for arg in typing.get_args(hints[name]) if typing.get_origin(arg) is typing.Literal]
                values = typing.get_args(literal[0]) if literal else typing.get_args(hints[name])
                assert values == tuple(choices), (kind, name)
                assert (type(None) in typing.get_args(hints[name])) == (type(None) in typing.get_args(declared))
            else:
                assert hints[name] == declared, (kind, name)
        everything |= _keys(typed_dict)
    assert _keys(load_options.LoadOptions) == everything | {LEGACY_MODEL_ARGS}


def test_a_field_added_to_an_options_class_changes_the_generated_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above fails for a field the module lacks: the generator reads the classes themselves."""

    @validated
    @dataclass(frozen=True)
    class WiderHFOptions(HFOptions):
        """Loading and running a transformers causal LM, with one option more."""

        lora: str | None = backend_option(None, help="an adapter to apply")

    before = load_options_source()
    monkeypatch.setattr("robusteval.models.load_options_gen.builtin_options_classes",
                        lambda: {**builtin_options_classes(), "hf": WiderHFOptions})
    after = load_options_source()
    assert after != before
    assert "class WiderHFLoadOptions(CommonLoadOptions, total=False):" in after
    assert "    #: an adapter to apply (default None)\n    lora: str | None\n" in after


def test_every_typed_keyword_passes_the_run_time_check_for_every_builtin_spec() -> None:
    """What the types admit, ``load_model`` accepts at run time: every key of LoadOptions (with its option's
    default) for every built-in spec, as one option set (a backend ignores another's)."""
    defaults = {name: field.default for options_type in builtin_options_classes().values()
                for name, field in option_fields(options_type).items()}
    keywords = {name: defaults[name] for name in _keys(load_options.LoadOptions) if name != LEGACY_MODEL_ARGS}
    specs = {"hf": "hf:model", "openai": "openai:m@http://127.0.0.1:1/v1"}
    assert set(specs) == set(builtin_options_classes())
    for kind, spec in specs.items():
        resolved = resolve_options(spec, {**keywords, LEGACY_MODEL_ARGS: {}})
        assert type(resolved) is builtin_options_classes()[kind]
