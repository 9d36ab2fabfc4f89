"""Every random generator in robusteval comes from here: derived from (seed, purpose, unit key).

One user seed fans out into independent streams: ``derive_rng(seed, "matcha-insert", example_id)`` does not
depend on the order, batch size, limit or resumption of a run, and two purposes never share a stream (the
bootstrap of a summary and the sampling of its data are independent even with the same seed). The
derivation hashes the JSON of ``[seed, purpose, *key]`` with SHA-256, so it is stable across Python versions,
processes and machines (``hash()`` is salted per process; ``random.Random(str)`` is stable but Python-only).
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: The default of every ``--seed`` and ``--bootstrap-seed``.
DEFAULT_SEED = 0


def derive_seed(seed: int, purpose: str, *key: Any) -> int:
    """A 63-bit integer seed for ``purpose`` and ``key`` under the user's ``seed``."""
    if seed is None or isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")  # never a silent None -> 0
    blob = json.dumps([seed, purpose, *key], sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return int.from_bytes(hashlib.sha256(blob.encode("utf-8")).digest()[:8], "little") >> 1


def derive_rng(seed: int, purpose: str, *key: Any) -> np.random.Generator:
    """A numpy generator of its own for ``purpose`` and ``key``."""
    import numpy as np

    return np.random.default_rng(derive_seed(seed, purpose, *key))


def derive_random(seed: int, purpose: str, *key: Any) -> random.Random:
    """A ``random.Random`` of its own for ``purpose`` and ``key``."""
    return random.Random(derive_seed(seed, purpose, *key))
