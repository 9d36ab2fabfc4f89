"""Where the shared public datasets are: ``$ROBUSTEVAL_DATA_DIR``, the repository's ``../shared/data``, or
``/work/shared/data`` (a clone elsewhere still finds them). Tests that need a file skip when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

_CANDIDATES = [
    os.environ.get("ROBUSTEVAL_DATA_DIR"),
    str(Path(__file__).resolve().parents[2].parent / "shared" / "data"),
    "/work/shared/data",
]
SHARED_DATA = next((Path(c) for c in _CANDIDATES if c and Path(c).is_dir()), Path("/work/shared/data"))
