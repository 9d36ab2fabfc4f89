"""CPU time of ``robusteval --help`` and of every command's and subcommand's ``--help`` (issue 38, item 6: under
0.5 s each).

Each help is printed by a fresh ``python -m robusteval.cli.main ... --help`` child; its CPU time (user + system,
from ``os.wait4``) is what counts, since wall time on a shared machine measures the neighbours. The command tree
is read from the parser itself (``robusteval.cli.main.command_paths``, as tests/cli/test_cli_help_light.py reads it), so a
new subcommand is measured without editing this file. The load average is printed at the start and the end: on a
shared machine CPU time still grows with the load (caches, frequency), so compare runs made under similar load.

    python bench/cli_help.py            # 3 runs of each, min / median / max CPU seconds
    python bench/cli_help.py --runs 5 --limit 0.5   # exit 1 when any median is at or over 0.5 s
    python bench/cli_help.py --slowest 5            # then the 5 slowest medians again, slowest first
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys


def help_cpu(path: tuple[str, ...]) -> float:
    """CPU seconds (user + system) of one ``--help`` in a fresh interpreter."""
    process = subprocess.Popen([sys.executable, "-m", "robusteval.cli.main", *path, "--help"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        error = process.stderr.read().decode() if process.stderr else ""
        raise SystemExit(f"robusteval {' '.join(path)} --help exited {process.returncode}: {error[-500:]}")
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs of each help (default 3)")
    parser.add_argument("--limit", type=float, default=None, help="exit 1 when a median CPU time reaches this")
    parser.add_argument("--top", action="store_true", help="only the top level and `attack matcha`")
    parser.add_argument("--slowest", type=int, default=5, metavar="N",
                        help="repeat the N slowest medians at the end, slowest first (default 5; 0: none)")
    args = parser.parse_args()

    from robusteval.cli.main import command_paths

    paths = [(), ("attack", "matcha")] if args.top else command_paths()
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load:.2f} at the start; "
          f"{args.runs} runs each, CPU seconds (user + system)")
    print(f"{'command':<42} {'min':>6} {'median':>6} {'max':>6}")
    medians: dict[str, float] = {}
    for path in paths:
        times = [help_cpu(path) for _ in range(args.runs)]
        name = " ".join(("robusteval", *path, "--help"))
        medians[name] = statistics.median(times)
        print(f"{name:<42} {min(times):6.3f} {medians[name]:6.3f} {max(times):6.3f}")
    slowest = sorted(medians.items(), key=lambda item: -item[1])
    if args.slowest > 0:
        print(f"the {min(args.slowest, len(slowest))} slowest of {len(slowest)} (median CPU seconds):")
        for name, median in slowest[:args.slowest]:
            print(f"  {name:<42} {median:6.3f}")
    worst = slowest[0][1]
    print(f"slowest median {worst:.3f} s ({slowest[0][0]}); load {os.getloadavg()[0]:.2f} at the end")
    return 1 if args.limit is not None and worst >= args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
