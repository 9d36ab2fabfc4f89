"""Native sampling: seeded, reproducible, distinct, constraints honoured, originals excludable."""

from __future__ import annotations

import json
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robusteval.variants.expr import evaluate
from robusteval.variants.sampler import format_value, instantiate, sample_native
from robusteval.variants.template import TemplateError, load_template_file, parse_template, range_values


def _tpl(**overrides: Any) -> Any:
    data: dict[str, Any] = {
        "id": "t",
        "question": "Add {{a}} and {{b}}.",
        "variables": {"a": {"range": [1, 30]}, "b": {"range": [1, 30]}},
        "constraints": ["a < b"],
        "answer": "a + b",
    }
    data.update(overrides)
    return parse_template(data)


def test_reproducible_and_seed_dependent() -> None:
    t = _tpl()
    first = [i.to_json() for i in sample_native(t, 5, seed=1).instances]
    again = [i.to_json() for i in sample_native(_tpl(), 5, seed=1).instances]
    other = [i.to_json() for i in sample_native(t, 5, seed=2).instances]
    assert first == again
    assert first != other
    assert [i["id"] for i in first] == [f"t_{j}" for j in range(5)]


def test_templates_do_not_influence_each_other() -> None:
    a, b = _tpl(id="a"), _tpl(id="b")
    alone, _, _ = instantiate([b], 5, seed=3)
    together, _, _ = instantiate([a, b], 5, seed=3)
    assert [i.to_json() for i in alone] == [i.to_json() for i in together if i.template == "b"]


@settings(max_examples=40, deadline=None)
@given(
    lo=st.integers(-20, 20),
    width=st.integers(2, 25),
    step=st.sampled_from([1, 2, 3]),
    n=st.integers(1, 8),
    seed=st.integers(0, 2**31),
)
def test_instances_distinct_and_satisfy_constraints(
    lo: int, width: int, step: int, n: int, seed: int
) -> None:
    t = _tpl(
        variables={"a": {"range": [lo, lo + width, step]}, "b": {"range": [lo, lo + width]}},
        constraints=["a < b", "(a + b) % 2 == 0"],
    )
    try:
        result = sample_native(t, n, seed)
    except TemplateError as exc:
        # Only possible when no pair a < b with an even sum exists in the domain.
        assert "unsatisfiable" in str(exc)
        a_vals, b_vals = range_values(lo, lo + width, step), range_values(lo, lo + width, 1)
        assert not any(a < b and (a + b) % 2 == 0 for a in a_vals for b in b_vals)
        return
    questions = [i.question for i in result.instances]
    assert len(set(questions)) == len(questions)
    assert len(questions) <= n
    for inst in result.instances:
        a, b = int(inst.values["a"]), int(inst.values["b"])
        assert a < b and (a + b) % 2 == 0
        assert inst.answer == a + b
    if len(questions) < n:
        assert result.warnings and "distinct" in result.warnings[0]


def test_exclude_original() -> None:
    t = _tpl(
        variables={"a": {"set": [1, 2]}, "b": {"set": [3]}},
        constraints=[],
        original={"a": 1, "b": 3},
        original_answer=4,
    )
    with_original = {i.values["a"] for i in sample_native(t, 5, 0).instances}
    assert with_original == {"1", "2"}
    without = sample_native(t, 5, 0, exclude_original=True).instances
    assert [i.values["a"] for i in without] == ["2"]
    only_original = _tpl(
        variables={"a": {"set": [1]}, "b": {"set": [3]}},
        constraints=[],
        original={"a": 1, "b": 3},
        exclude_original=True,
    )
    with pytest.raises(TemplateError, match=r"unsatisfiable.*original values"):
        sample_native(only_original, 5, 0)


def test_unsatisfiable_constraint_is_a_clear_error() -> None:
    t = _tpl(constraints=["a > 100"])
    with pytest.raises(TemplateError) as info:
        sample_native(t, 5, 0)
    assert (
        "template 't'" in str(info.value)
        and "unsatisfiable" in str(info.value)
        and "constraints" in str(info.value)
    )


def test_large_domain_uses_rejection_sampling() -> None:
    t = _tpl(
        variables={"a": {"range": [0, 1000]}, "b": {"range": [0, 1000]}},
        constraints=["a < b", "gcd(a, b) == 1"],
    )
    result = sample_native(t, 20, 5)
    assert len(result.instances) == 20
    for inst in result.instances:
        a, b = int(inst.values["a"]), int(inst.values["b"])
        assert a < b and evaluate("gcd(a, b)", {"a": a, "b": b}) == 1
    impossible = _tpl(
        variables={"a": {"range": [0, 1000]}, "b": {"range": [0, 1000]}}, constraints=["a == b + 5000"]
    )
    with pytest.raises(TemplateError, match="random draws"):
        sample_native(impossible, 3, 0)


def test_aligned_values_rounding_and_formats() -> None:
    t = parse_template(
        {
            "id": "al",
            "question": "{{x}} {{y}} {{z}} {{f}} {{p}}",
            "variables": {
                "x": {"values": [1, 2, 3]},
                "y": {"values": ["one", "two", "three"]},
                "z": {"range": [0.5, 2, 0.25], "round": 1},
                "f": {"expr": "Fraction(x, 4)", "format": "latex"},
                "p": {"expr": "z / 3", "format": ".3f"},
            },
            "answer": {"values": [10, 20, 30]},
        }
    )
    instances = sample_native(t, 50, 0).instances
    assert len(instances) == 3 * 6
    for inst in instances:
        x = int(inst.values["x"])
        assert inst.values["y"] == ["one", "two", "three"][x - 1]
        assert inst.answer == 10 * x
        assert inst.values["f"] in {r"\frac{1}{4}", r"\frac{1}{2}", r"\frac{3}{4}"}
        assert len(inst.values["p"].split(".")[1]) == 3
    assert range_values(0.5, 2, 0.25) == [0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
    # The table in docs/variants.md ("format").
    values = [3, 3.0, 1.9999999999999998, Fraction(3, 4), 2.5]
    table = {
        "auto": ["3", "3", "2", "3/4", "2.5"],
        "str": ["3", "3.0", "1.9999999999999998", "3/4", "2.5"],
        "frac": ["3", "3", "2", "3/4", "5/2"],
        "latex": ["3", "3", "2", r"\frac{3}{4}", r"\frac{5}{2}"],
        ".2f": ["3.00", "3.00", "2.00", "0.75", "2.50"],
    }
    for fmt, expected in table.items():
        assert [format_value(v, fmt) for v in values] == expected, fmt
    assert format_value(0.1 + 0.2, "auto") == "0.3"


def test_example_file_loads_validates_and_samples(tmp_path: Path) -> None:
    example = resources.files("robusteval.variants") / "example_templates.yaml"
    result = load_template_file(str(example))
    assert not result.problems and len(result.templates) == 3
    instances, problems, _ = instantiate(result.templates, 5, 42)
    assert not problems and len(instances) == 15
    cyclists = [i for i in instances if i.template == "cyclists"]
    assert all(
        not (i.values["a"] == "12" and i.values["b"] == "18" and i.values["t"] == "3") for i in cyclists
    )


def test_schema_documents_the_checked_keys() -> None:
    from robusteval.variants import template as tmod

    schema = json.loads((resources.files("robusteval.variants") / "template.schema.json").read_text())
    assert set(schema["$defs"]["template"]["properties"]) == tmod._TEMPLATE_KEYS
    variable = schema["$defs"]["variable"]["oneOf"][1]["properties"]
    assert set(variable) == tmod._VARIABLE_KEYS
    try:  # full validation only where jsonschema happens to be installed (not a dependency)
        import jsonschema
    except ImportError:
        return
    import yaml

    example = resources.files("robusteval.variants") / "example_templates.yaml"
    jsonschema.validate(yaml.safe_load(example.read_text()), schema)
