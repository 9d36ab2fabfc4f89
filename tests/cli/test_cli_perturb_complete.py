"""``perturb`` sees that its output is already complete for the same settings and returns at once."""

from __future__ import annotations

import json
from pathlib import Path

from robusteval.cli.main import main


def args(data: Path, out: Path, *extra: str) -> list[str]:
    return ["perturb", "--dataset", "jsonl", "--data-file", str(data), "--answer-type", "text", "--language", "en",
            "--method", "C-keyboard", "--out", str(out), *extra]


def test_complete_output_is_kept_and_changed_settings_recompute(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "q.jsonl"
    rows = [{"question": f"The quick brown fox number {i} jumps over the lazy dog", "answer": "yes"}
            for i in range(20)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "p.jsonl"
    assert main(args(data, out)) == 0
    first = out.read_bytes()
    stat = out.stat()
    capsys.readouterr()
    assert main(args(data, out)) == 0
    printed = capsys.readouterr().out
    assert "already complete for these settings" in printed and "20/20 examples changed" in printed
    assert out.stat().st_ino == stat.st_ino and out.stat().st_mtime_ns == stat.st_mtime_ns
    assert not Path(f"{out}.parts").exists()
    # Another seed is another file.
    assert main(args(data, out, "--seed", "7")) == 0
    assert "already complete" not in capsys.readouterr().out and out.read_bytes() != first
    # An incomplete file (a line lost) is recomputed, and comes back identical to the seed-7 output.
    seven = out.read_bytes()
    out.write_bytes(b"".join(seven.splitlines(keepends=True)[:-1]))
    assert main(args(data, out, "--seed", "7")) == 0
    assert "already complete" not in capsys.readouterr().out and out.read_bytes() == seven
