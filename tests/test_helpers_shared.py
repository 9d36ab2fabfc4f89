"""The suite's own skip rule (tests/helpers/shared.py): a missing dataset or package skips a test, and FAILS it
under the switches CI sets, so a CI run cannot pass by skipping."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import shared
from helpers.shared import require_modules, shared_file

SKIP = pytest.skip.Exception
FAIL = pytest.fail.Exception


@pytest.fixture
def no_switches(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (shared.REQUIRE_DATA, shared.REQUIRE_ALL):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_data_dir_env_wins_even_when_it_does_not_exist(no_switches: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_switches.setenv("ROBUSTEVAL_DATA_DIR", str(tmp_path / "nowhere"))
    assert shared._data_dir() == tmp_path / "nowhere"  # no fallback to ../shared/data or /work/shared/data
    no_switches.setenv("ROBUSTEVAL_DATA_DIR", str(tmp_path))
    assert shared._data_dir() == tmp_path


def test_missing_data_skips_or_fails(no_switches: pytest.MonkeyPatch, tmp_path: Path) -> None:
    no_switches.setattr(shared, "SHARED_DATA", tmp_path)
    (tmp_path / "there.jsonl").write_text("{}\n")
    assert shared_file("there.jsonl") == tmp_path / "there.jsonl"
    with pytest.raises(SKIP, match=r"absent\.jsonl is missing"):
        shared_file("absent.jsonl")
    for switch in (shared.REQUIRE_DATA, shared.REQUIRE_ALL):
        with no_switches.context() as env:
            env.setenv(switch, "1")
            with pytest.raises(FAIL, match=rf"{switch}=1 but .*absent\.jsonl is missing"):
                shared_file("absent.jsonl")
            assert shared_file("there.jsonl").is_file()  # present data is fine under the switch
    no_switches.setenv(shared.REQUIRE_DATA, "0")  # only "1" switches it on
    with pytest.raises(SKIP):
        shared_file("absent.jsonl")


def test_missing_package_skips_or_fails_under_require_all(no_switches: pytest.MonkeyPatch) -> None:
    require_modules("json", "pytest")  # present: nothing happens
    with pytest.raises(SKIP, match="robusteval_no_such_package"):
        require_modules("json", "robusteval_no_such_package")
    no_switches.setenv(shared.REQUIRE_DATA, "1")  # the data switch alone does not cover packages
    with pytest.raises(SKIP):
        require_modules("robusteval_no_such_package")
    no_switches.setenv(shared.REQUIRE_ALL, "1")
    with pytest.raises(FAIL, match="ROBUSTEVAL_REQUIRE_ALL=1 but optional package"):
        require_modules("robusteval_no_such_package")
