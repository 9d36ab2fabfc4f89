"""The example data inside the page: plain JSON that no run text can close, or gzip + base64 above a size;
serialised once either way."""

from __future__ import annotations

import base64
import gzip
import json

import pytest

from robusteval.report import html


@pytest.mark.parametrize("n", [3, 5_000])
def test_browser_data_round_trips_and_is_serialised_once(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [{"title": f"q{i} </script> & \u2028 ünïcode 🙂", "blocks": [{"text": {"t": "x" * 80}}]}
             for i in range(n)]
    calls = []
    dumps = json.dumps
    monkeypatch.setattr(html.json, "dumps", lambda *a, **k: calls.append(1) or dumps(*a, **k))
    encoding, text = html.browser_data(items)
    assert len(calls) == 1
    if n == 3:
        assert encoding == "json" and "</script" not in text and "\u2028" not in text
        assert json.loads(text) == items
    else:
        assert encoding == "gzip-base64"
        assert json.loads(gzip.decompress(base64.b64decode(text)).decode("utf-8")) == items
