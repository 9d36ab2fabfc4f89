"""The VAR-MATH example browser's items: each instance with its samples, built in time linear in the records."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from robusteval.variants.results.section import STAGE, problem_items


class StubRun:
    """What ``problem_items`` reads of a run, without a store: many problems, instances and samples."""

    def __init__(self, path: Path, problems: int, instances: int, samples: int) -> None:
        self.path, self.identity = path, {}
        self.stages = {STAGE: problems * instances * samples}
        self._records = [{"id": f"p{p}_{i}", "sample": k, "question": f"q{p}_{i}", "gold": str(p),
                          "completion": f"c{p}_{i}_{k}"}
                         for k in reversed(range(samples)) for p in range(problems) for i in range(instances)]
        self.summary = {"problems": [{"problem": f"p{p}", "strict": 1.0, "loose": 1.0,
                                      "instances": {f"p{p}_{i}": 1.0 for i in range(instances)}}
                                     for p in range(problems)]}

    def records(self, stage: str) -> list[dict[str, Any]]:
        return self._records

    def find_file(self, stored: str, sha256: str | None = None) -> Path | None:
        return None


def test_each_instance_lists_its_own_samples_in_order(tmp_path: Path) -> None:
    items = problem_items(StubRun(tmp_path, 3, 2, 3), "run")  # type: ignore[arg-type]
    rows = dict(items[1]["blocks"][1]["rows"])
    assert rows["gold answer"] == "1" and rows["instance accuracy"] == "100% over 3 sample(s)"
    more = items[1]["blocks"][2]
    assert more["more"] == "model output for p1_0"
    assert [b["text"]["t"] for b in more["blocks"]] == ["c1_0_0", "c1_0_1", "c1_0_2"]


def test_many_instances_take_linear_time(tmp_path: Path) -> None:
    """40,000 instances of 2 samples in about 2 s: the records are indexed once per run, not scanned once per
    instance (over a minute)."""
    run = StubRun(tmp_path, 20_000, 2, 2)
    started = time.perf_counter()
    items = problem_items(run, "run")  # type: ignore[arg-type]
    assert len(items) == 20_000 and time.perf_counter() - started < 15


def test_a_damaged_jsonl_beside_the_run_gives_the_rows_before_the_damage(tmp_path: Path) -> None:
    from robusteval.variants.results.section import _read_jsonl

    path = tmp_path / "graded.jsonl"
    path.write_text('{"id": "a"}\n\n{"id": "b"}\n{broken\n{"id": "c"}\n', encoding="utf-8")
    assert _read_jsonl(path) == [{"id": "a"}, {"id": "b"}]
    assert _read_jsonl(tmp_path / "missing.jsonl") == []
    path.write_bytes(b"\xff\xfe")
    assert _read_jsonl(path) == []
