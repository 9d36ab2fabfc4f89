"""``robusteval doctor``: check that the installation is complete (packaged data, optional extras)."""

from __future__ import annotations

import argparse

from robusteval.cli.common import add_command

#: The command and its line in `robusteval --help` (read without building its options: cli.main).
COMMAND = "doctor"
HELP = "check the installation: packaged data files and optional extras"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_command(
        subparsers,
        COMMAND,
        help=HELP,
        description="Loads every data file robusteval ships (sample questions, exemplars, judge prompts, "
        "classification and variant templates, the template schema) through the code that uses it, and says "
        "which optional extras are installed. Exit code 1 when a packaged file is missing or broken.",
        example="robusteval doctor",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from robusteval import __version__
    from robusteval.doctor import check_installation

    packaged, optional = check_installation()
    print(f"robusteval {__version__}")
    for check in packaged + optional:
        print(f"  {'ok ' if check.ok else 'MISSING' if check in optional else 'FAIL'} {check.name}: {check.detail}")
    broken = [c for c in packaged if not c.ok]
    if broken:
        print(f"{len(broken)} packaged resource(s) missing or broken: reinstall robusteval")
        return 1
    return 0
