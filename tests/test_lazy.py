"""A light package's names load on first use, are kept after it, and a name it does not have is refused."""

from __future__ import annotations

import subprocess
import sys


def test_a_name_loads_its_module_on_first_use_only() -> None:
    script = (
        "import sys\n"
        "import robusteval.evals.prompt_robustness as p\n"
        "assert 'robusteval.evals.prompt_robustness.spread_pipeline' not in sys.modules\n"
        "f = p.prompt_spread\n"
        "assert 'robusteval.evals.prompt_robustness.spread_pipeline' in sys.modules\n"
        "assert vars(p)['prompt_spread'] is f  # kept: the next read skips the lookup\n"
        "import robusteval.evals.robustness as r\n"
        "assert r.robustness.__module__ == 'robusteval.evals.robustness.pipeline'  # the rest of its pipeline\n"
        "try:\n"
        "    p.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "module 'robusteval.evals.prompt_robustness' has no attribute 'no_such_name'"
