"""CPU time of ``robusteval --help`` and of every subcommand's ``--help`` (issue 38, item 7: under 0.5 s each).

Each help is printed by a fresh ``python -m robusteval.cli.main ... --help`` child; its CPU time (user + system,
from ``os.wait4``) is what counts, since wall time on a shared machine measures the neighbours. The command tree
is read from the parser itself, so a new subcommand is measured without editing this file.

    python bench/cli_help.py            # 3 runs of each, min / median / max CPU seconds
    python bench/cli_help.py --runs 5 --limit 0.5   # exit 1 when any median is at or over 0.5 s
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys


def command_paths() -> list[tuple[str, ...]]:
    """Every command path of the CLI: ``()`` for the top level, then ``("attack",)``, ``("attack", "matcha")``, …"""
    from robusteval.cli.main import build_parser

    paths: list[tuple[str, ...]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        paths.append(path)
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return paths


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
    args = parser.parse_args()

    paths = [(), ("attack", "matcha")] if args.top else command_paths()
    load = os.getloadavg()[0]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load:.2f} at the start; "
          f"{args.runs} runs each, CPU seconds (user + system)")
    print(f"{'command':<34} {'min':>6} {'median':>6} {'max':>6}")
    worst = 0.0
    for path in paths:
        times = [help_cpu(path) for _ in range(args.runs)]
        median = statistics.median(times)
        worst = max(worst, median)
        print(f"{'robusteval ' + ' '.join(path) + ' --help':<34} {min(times):6.3f} {median:6.3f} {max(times):6.3f}")
    print(f"slowest median {worst:.3f} s; load {os.getloadavg()[0]:.2f} at the end")
    return 1 if args.limit is not None and worst >= args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
