"""The ``robusteval`` command: one module per command group, each with a ``register(subparsers)``.

Every flag can also be set in a TOML file passed with ``--config``: keys are the flag names (``data-file`` or
``data_file``); flags given on the command line win over the file. Errors a user can fix print one line and
exit with code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from robusteval import __version__
from robusteval.cli.common import _REQUIRED
from robusteval.config import ConfigError
from robusteval.errors import Terminated, UserError, environment_error, resume_hint, set_command

# Order = order in `robusteval --help`: these, with the registered methods' own commands (``MethodSpec.cli``, in
# the methods' order) after ``attack``, and the tools that read runs last.
COMMAND_MODULES = (
    "robusteval.cli.quickstart",
    "robusteval.cli.study",
    "robusteval.cli.attack",
    "robusteval.cli.sweep",
    "robusteval.cli.perturb",
    "robusteval.cli.judges",
)
TOOL_MODULES = ("robusteval.cli.report", "robusteval.cli.runs", "robusteval.cli.doctor")


def command_modules() -> list[str]:
    """Every command's module, in ``--help``'s order (see :data:`COMMAND_MODULES`)."""
    from robusteval.methods import methods

    first, rest = COMMAND_MODULES[:3], COMMAND_MODULES[3:]
    return list(dict.fromkeys([*first, *(spec.cli for spec in methods() if spec.cli), *rest, *TOOL_MODULES]))


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command's parser. Given the command line, only the command it names gets its options (building a
    command's options imports its config classes); the others are listed by name and help line alone, so
    ``robusteval --help`` imports no pipeline, no numpy and no torch. Without ``argv``: every command, complete."""
    parser = argparse.ArgumentParser(
        prog="robusteval",
        description="Measure how robust large language models really are.",
        epilog="run `robusteval COMMAND --help` for each command's options and an example",
    )
    parser.add_argument("--version", action="version", version=f"robusteval {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="print full tracebacks (also accepted after the command, or ROBUSTEVAL_DEBUG=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    named = _command_named(argv)
    for module_name in command_modules():
        module = importlib.import_module(module_name)
        if argv is None or named == module.COMMAND:
            module.register(subparsers)
        else:
            subparsers.add_parser(module.COMMAND, help=module.HELP)  # listed; its options are built when named
    return parser


def command_paths(parser: argparse.ArgumentParser | None = None) -> list[tuple[str, ...]]:
    """Every command path of ``parser`` (default: the full parser), each subparsers action of every parser walked
    down to the last level: ``()`` for the top level, then ``("attack",)``, ``("attack", "matcha")``, …"""
    paths: list[tuple[str, ...]] = []

    def walk(sub: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        paths.append(path)
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*path, name))

    walk(parser or build_parser(), ())
    return paths


def _command_named(argv: Sequence[str] | None) -> str | None:
    """The command a command line names: its first word that is not an option (the top level's options,
    --help, --version and --debug, take no value)."""
    return next((word for word in argv or () if not word.startswith("-")), None)


def _load_config(path: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The flags a ``--config`` TOML file sets; a bad key or value is one line naming the file, the line and the
    key, with the closest key for a typo and the kind a key wants for a value of the wrong one."""
    from robusteval.config import describe_kinds, did_you_mean
    from robusteval.studies.plan import TomlWhere

    file = Path(path)
    if not file.is_file():
        raise UserError(f"--config {path}: no such file")
    try:
        text = file.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: invalid TOML: {exc}") from None
    where = TomlWhere(path, text)
    known = {a.dest: a for a in parser._actions if a.dest not in ("help", "config") and not a.dest.startswith("_")}
    values: dict[str, Any] = {}
    # A table named after a group of the command's flags (a shared block: ``[generation]``) holds its keys.
    groups = {str(g.title): g for g in parser._action_groups if g.title}
    items: list[tuple[str, Any]] = []
    for key, value in data.items():
        group = groups.get(key.replace("-", "_")) if isinstance(value, dict) else None
        if group is None:
            items.append((key, value))
            continue
        inside = {a.dest for a in group._group_actions}
        for inner, inner_value in value.items():
            if inner.replace("-", "_") not in inside:
                raise where.error(f"[{key}] has no key {inner}{did_you_mean(inner.replace('-', '_'), inside)}",
                                  key=inner, field=inner)
            items.append((inner, inner_value))
    for key, value in items:
        dest = key.replace("-", "_")
        if dest not in known:
            flags = sorted(d.replace("_", "-") for d in known)
            hint = did_you_mean(key.replace("_", "-"), flags)
            raise where.error(f"unknown key for this command{hint}" if hint else
                              f"unknown key for this command; known keys: {', '.join(flags)}", key=key, field=key)
        action = known[dest]
        if isinstance(value, list) and action.nargs is None:
            value = ",".join(str(v) for v in value)  # lists become comma-separated flags (e.g. --sets)
        convert = action.type  # typeshed also allows a registered type's name; this parser registers none
        if callable(convert) and isinstance(value, str | int | float) and not isinstance(value, bool):
            try:
                if convert is int and isinstance(value, float):
                    raise ValueError(value)  # 2.5 is no whole number (int() would cut it to 2)
                value = convert(str(value)) if convert is not str else str(value)
            except (ValueError, TypeError, argparse.ArgumentTypeError) as exc:
                wants = describe_kinds({action.type}) if action.type in (int, float) else None
                problem = f"expected {wants}, got {value!r}" if wants else str(exc)
                raise where.error(problem, key=key, field=key) from None
        if action.choices is not None and value not in action.choices:
            choices = [str(c) for c in action.choices]
            raise where.error(f"{value!r} is not one of {', '.join(choices)}{did_you_mean(str(value), choices)}",
                              key=key, field=key)
        values[dest] = value
    return values


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if getattr(args, "config", None):
        sub: argparse.ArgumentParser = args._parser
        sub.set_defaults(**_load_config(args.config, sub))
        args = parser.parse_args(argv)
    missing = [flag for dest, flag in getattr(args, _REQUIRED, []) if getattr(args, dest, None) in (None, "")]
    if missing:
        args._parser.error("missing " + ", ".join(missing) + " (give it as a flag or in --config)")
    return args


def write_crash_log(exc: BaseException, argv: Sequence[str]) -> Path | None:
    """Save the traceback of an unexpected error where the user can find it; None if nothing is writable."""
    import datetime
    import os
    import platform
    import tempfile
    import traceback

    from robusteval.paths import cache_root

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = (f"robusteval {__version__}, Python {platform.python_version()}, {platform.platform()}\n"
            f"command: robusteval {' '.join(argv)}\n\n"
            + "".join(traceback.format_exception(exc)))
    for directory in (cache_root() / "crash", Path(tempfile.gettempdir())):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"robusteval-crash-{stamp}-{os.getpid()}.log"
            path.write_text(text, encoding="utf-8")
            return path
        except OSError:
            continue
    return None


#: Seconds a stopped run gets to clean up (commit what it holds, close the store, shut a local Ray instance down)
#: before it exits anyway: whatever blocks then (a native call that never checks for signals, a thread joined at
#: exit that waits on a stalled server, a Ray process that will not die) cannot keep a stopped run alive. What is
#: committed stays committed: each unit is its own SQLite transaction, the run lock is a flock the kernel drops,
#: and the reaper of a local Ray instance kills the instance once this process is gone.
STOP_GRACE_S = 4.0
#: Exit codes of a run stopped by a signal (128 + the signal's number, as a shell reports it).
STOP_CODES = {int(signal.SIGINT): 130, int(signal.SIGTERM): 143}


class _Stop:
    """How this process was asked to stop. The first SIGINT or SIGTERM raises in the main thread (every
    ``finally`` runs) and arms a deadline of :data:`STOP_GRACE_S`; a second signal, or the deadline, ends the
    process at once with the same line and exit code."""

    def __init__(self, deadline: bool = True) -> None:
        self.code: int | None = None  # 130 or 143 once a signal came
        self._said = False
        self._deadline_armed = deadline  # False when main() is called in a process that goes on after it

    def say(self, code: int) -> None:
        """The run's one line about the stop (printed once, whoever gets there first)."""
        if not self._said:
            self._said = True
            what = "interrupted" if code == 130 else "terminated (SIGTERM)"
            print(f"robusteval: {what}; {resume_hint()}", file=sys.stderr, flush=True)

    def handler(self, signum: int, frame: object) -> None:
        code = STOP_CODES.get(signum, 128 + signum)
        if self.code is not None:  # asked again: the user does not want to wait for the cleanup
            self.exit_now(self.code)
        self.code = code
        if self._deadline_armed:
            threading.Thread(target=self._deadline, name="robusteval-stop-deadline", daemon=True).start()
        # KeyboardInterrupt for SIGTERM too (the exit code says which): native code that checks for signals while
        # it waits (Ray's ray.wait / ray.get) turns a KeyboardInterrupt into its own, but leaves any other
        # exception a handler raises set behind a normal return, which surfaces as a SystemError (a 'bug').
        raise KeyboardInterrupt

    def _deadline(self) -> None:
        time.sleep(STOP_GRACE_S)
        _log_blocked_cleanup()
        self.exit_now(self.code or 130)

    def exit_now(self, code: int) -> NoReturn:
        self.say(code)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)


def _log_blocked_cleanup() -> None:
    """Where the main thread was when the grace ran out, saved in the crash-log folder: what blocked the cleanup."""
    import tempfile
    import traceback

    from robusteval.paths import cache_root

    stack = sys._current_frames().get(threading.main_thread().ident or -1)
    text = (f"robusteval {__version__}: the cleanup after a stop signal overran {STOP_GRACE_S} s; main thread:\n"
            + ("".join(traceback.format_stack(stack)) if stack is not None else "(gone)\n"))
    for directory in (cache_root() / "crash", Path(tempfile.gettempdir())):
        with contextlib.suppress(OSError):
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"robusteval-stop-overran-{os.getpid()}.log").write_text(text, encoding="utf-8")
            return


def main(argv: Sequence[str] | None = None) -> int:
    as_program = argv is None  # the console script (or python -m): the process ends when main returns
    argv = list(sys.argv[1:] if argv is None else argv)
    # --debug anywhere on the line (argparse would only take it before the command).
    debug = "--debug" in argv or os.environ.get("ROBUSTEVAL_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    set_command(argv)
    # SIGTERM ends a run as Ctrl-C does (every `finally` runs: the store closed, a local Ray instance shut down),
    # within STOP_GRACE_S whatever blocks.
    stop = _Stop(deadline=as_program)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, stop.handler) for sig in STOP_CODES} if main_thread else {}
    try:
        code = _main(argv, debug, stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        set_command(None)
    if stop.code is not None and as_program:
        # Everything that must persist is closed by now. The interpreter's teardown is skipped: a garbage
        # collection of a large heap (seconds under load) and the joins of threads that wait on a stalled server.
        stop.exit_now(code)
    return code


def _main(argv: list[str], debug: bool, stop: _Stop | None = None) -> int:
    import traceback

    stop = stop or _Stop(deadline=False)
    try:
        args = parse_args(argv)
        if getattr(args, "threads", None) is not None:  # before anything imports torch (its OpenMP reads the env)
            from robusteval.models.threads import configure_threads, parse_threads

            configure_threads(parse_threads(args.threads), source="--threads")
        from robusteval.cli.common import executor_from_args
        from robusteval.executors import use_executor

        with use_executor(executor_from_args(args), close=True):
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        code = stop.code or 130  # 143 when SIGTERM raised it
        stop.say(code)
        return code
    except Terminated:
        stop.say(143)
        return 143
    except SystemExit:
        raise
    except BaseException as exc:
        if debug:
            traceback.print_exc()
        known = environment_error(exc)
        if known is not None:
            # A config names its fields as the API does; on the command line the same check speaks in flags.
            message = known.cli_message() if isinstance(known, ConfigError) else str(known)
            print(f"robusteval: error: {_one_line(message)}", file=sys.stderr)
            return known.exit_code
        log = write_crash_log(exc, argv)
        where = f"the full traceback is in {log}" if log else "no crash log could be written"
        print(f"robusteval: internal error (a bug in robusteval, please report it): {type(exc).__name__}: "
              f"{_one_line(str(exc))[:300]}; {where}; re-run with --debug to print it", file=sys.stderr)
        return 1


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
