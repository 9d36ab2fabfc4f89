"""The public API is typed for its users (issue 38, item 4): ``py.typed`` ships, and the names ``robusteval``
resolves lazily at run time are real imports to a type checker, so mypy flags misuse in a user's script."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import robusteval
from robusteval import variants
from robusteval.doctor import PACKAGED

PACKAGE = Path(robusteval.__file__).parent

# Third-party packages mypy need not analyse to check a call into robusteval (skipped: read as Any), so the
# test takes seconds, not the half minute a full analysis of torch and transformers takes.
_MYPY_INI = """\
[mypy]
ignore_missing_imports = True

[mypy-robusteval.*]
ignore_errors = True

[mypy-torch,torch.*,transformers,transformers.*,numpy,numpy.*,pandas,pandas.*,rich,rich.*,httpx,httpx.*,\
sympy,sympy.*,yaml,yaml.*,safetensors,safetensors.*,tokenizers,tokenizers.*,ray,ray.*]
follow_imports = skip
"""


def _type_checking_names(init: Path) -> dict[str, tuple[str, str]]:
    """Public name -> (module, attribute) of what the ``if TYPE_CHECKING:`` block of ``init`` gives a checker:
    its imports (``from M import A as N``), and ``N = _private`` assignments of a name imported privately."""
    tree = ast.parse(init.read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    for alias in statement.names:
                        found[alias.asname or alias.name] = (statement.module, alias.name)
                elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Name):
                    (target,) = statement.targets
                    assert isinstance(target, ast.Name) and statement.value.id.startswith("_"), ast.dump(statement)
                    found[target.id] = found[statement.value.id]
    return {name: where for name, where in found.items() if not name.startswith("_")}


def _type_checking_aliases(init: Path) -> list[ast.alias]:
    tree = ast.parse(init.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", None) == "TYPE_CHECKING")
    return [a for s in block.body if isinstance(s, ast.ImportFrom) for a in s.names]


def test_every_export_is_visible_to_type_checkers() -> None:
    """Each TYPE_CHECKING block and its package's ``_EXPORTS`` name the same objects, so they cannot drift."""
    assert _type_checking_names(PACKAGE / "__init__.py") == {
        **robusteval._EXPORTS, "variants": ("robusteval", "variants")}
    assert _type_checking_names(PACKAGE / "variants" / "__init__.py") == {
        name: (f"robusteval.variants.{module}", attribute)
        for name, (module, attribute) in variants._EXPORTS.items()}
    for init in (PACKAGE / "__init__.py", PACKAGE / "variants" / "__init__.py"):
        # Re-exported explicitly (``X as X``), as PEP 484 asks of a py.typed package; another name: assigned.
        aliases = _type_checking_aliases(init)
        assert aliases and all(a.asname == a.name or (a.asname or "").startswith("_") for a in aliases), init


def test_the_package_is_marked_typed_and_doctor_checks_it() -> None:
    assert (PACKAGE / "py.typed").is_file()
    check = dict(PACKAGED)["type marker"]
    assert "py.typed" in check()
    pyproject = (PACKAGE.parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"py.typed"' in pyproject  # package data: the wheel ships it


#: A user's script: each line marked ``# E: <text>`` must be flagged by mypy with that text on that line, and no
#: other line may be (the unmarked calls are right: a check that flagged everything would fail here).
_USER_SCRIPT = """\
from typing import Any

import robusteval as rv
from robusteval import variants
from robusteval.models import load_backend

config = rv.MatchaRunConfig(dataa=1)  # E: Unexpected keyword argument "dataa" for "MatchaRunConfig"
model = rv.load_model(123)  # E: Argument 1 to "load_model" has incompatible type "int"
data = rv.DataSpec("gsm8k", "gsm8k/test.jsonl", limit="x")  # E: Argument "limit" to "DataSpec" has incompatible type "str"
fine = rv.DataSpec("gsm8k", "gsm8k/test.jsonl", limit=5)
rv.load_model("hf:x", dtyp="bf16")  # E: Unexpected keyword argument "dtyp" for "load_model"; did you mean "dtype"?
rv.load_model("hf:x", batch_size="8")  # E: Argument "batch_size" to "load_model" has incompatible type "str"; expected "int"
rv.load_model("hf:x", decoder="statc")  # E: Argument "decoder" to "load_model" has incompatible type "Literal['statc']"
rv.load_model("openai:m@http://h/v1", timeout="30")  # E: Argument "timeout" to "load_model" has incompatible type "str"
load_backend("hf:x", trust_remote_cod=True)  # E: Unexpected keyword argument "trust_remote_cod" for "load_backend"
rv.describe_model("hf:x", max_memory=[4])  # E: Argument "max_memory" to "describe_model" has incompatible type "list[int]"
rv.load_model("hf:x", dtype="bfloat16", batch_size=4, max_memory="4GB", thinking="off", decoder="static",
              revision="abc", trust_remote_code=True, device_map=0, timeout=30, endpoint="chat", model_args={})
extra: dict[str, Any] = {"repeat": 2}  # a third-party backend's options
rv.load_model("echo:x", **extra)
rv.describe_model("openai:m@http://h/v1", reasoning_effort="low", max_retries=None)
rv.variants.ValidateConfig(templats="t.yaml")  # E: Unexpected keyword argument "templats" for "ValidateConfig"
variants.evaluate_expr(2)  # E: Argument 1 has incompatible type "int"; expected "str"
variants.evaluate_expr("1 + 2", {"x": 1})
result = rv.study("study.toml", executor=3)  # E: Argument "executor" to "study" has incompatible type "int"
result.leaderboard.rowz  # E: "StudyLeaderboard" has no attribute "rowz"
rv.study({"models": []}, executor="inprocess")
"""


def test_mypy_flags_misuse_of_the_public_api(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(_USER_SCRIPT, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text(_MYPY_INI, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         "--config-file", str(tmp_path / "mypy.ini"), str(user)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={"MYPYPATH": str(PACKAGE.parent), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1, result.stdout + result.stderr
    errors = {}
    for line in result.stdout.splitlines():
        if ": error:" in line:
            number = int(line.split(":")[1])
            assert number not in errors, result.stdout  # one error per misuse
            errors[number] = line
    expected = {number: line.split("# E: ")[1] for number, line in enumerate(_USER_SCRIPT.splitlines(), 1)
                if "# E: " in line}
    assert len(expected) == 13
    assert sorted(errors) == sorted(expected), result.stdout
    for number, text in expected.items():
        assert text in errors[number], (text, errors[number])
