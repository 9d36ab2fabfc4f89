"""What every command shares: subcommand construction, model/backend options, data options, seeds.

This and ``configflags`` are the only modules other ``cli/`` modules import; each command module parses flags
into a config and calls one pipeline of the library.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from robusteval.cli.configflags import (
    _REQUIRED,
    add_config_arguments,
    config_from_args,
    deprecated_flag,
    hide_flags,
    required_option,
)
from robusteval.data.spec import DataSpec
from robusteval.errors import UserError
from robusteval.seeding import DEFAULT_SEED


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keep the example block's layout and show defaults, where a default says something: not for None (an
    unset option, or one whose help says what unset means), not for an on/off flag (its help says what it
    turns on or off: "--no-random-start ... (default: True)" reads as if the flag were on), and not where the
    help already states its default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default is None or action.default is argparse.SUPPRESS or "(default" in text:
            return text
        if isinstance(action, argparse._StoreConstAction | argparse.BooleanOptionalAction) or action.nargs == 0:
            return text  # store_true / store_false / store_const: the flag's presence is the setting
        return super()._get_help_string(action)


def add_command(subparsers: Any, name: str, *, help: str, description: str, example: str) -> argparse.ArgumentParser:
    """Add a subcommand whose ``--help`` ends with a runnable example; gives it ``--config``."""
    parser = subparsers.add_parser(
        name,
        help=help,
        description=description,
        epilog="example:\n  " + example.strip().replace("\n", "\n  "),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--config", metavar="TOML", help="read flags from a TOML file (command-line flags win)")
    parser.set_defaults(**{_REQUIRED: [], "_parser": parser})
    return parser



# ----------------------------------------------------------------------------------------------- models
MODEL_HELP = "model spec: hf:/path/or/hub-id, hf:/path/model.gguf or openai:MODEL@http://host:port/v1"


def add_model_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    if required:
        required_option(parser, "--model", metavar="SPEC", help=MODEL_HELP)
    else:
        parser.add_argument("--model", metavar="SPEC", help=MODEL_HELP)
    add_backend_options(parser)


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """How models are run, for every model a command loads: the common options as flags (``--dtype``, ...), each
    backend's own as ``--model-args KEY=VALUE,...`` (declared once, in its options class:
    :mod:`robusteval.models.options`). The flags those replaced are accepted for one release, hidden."""
    group = parser.add_argument_group("model backend")
    group.add_argument("--dtype", default="auto", help="hf: auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16")
    group.add_argument("--device", default="auto", help="hf: auto, cpu, cuda, cuda:1, …")
    group.add_argument("--model-args", default=None, metavar="KEY=VALUE,…",
                       help="the backend's own options, e.g. hf: decoder=static,revision=abc,trust_remote_code=true; "
                       "openai: timeout=30,max_concurrency=64,endpoint=chat,logprobs=off "
                       "(every option per backend: docs/backends.md)")
    group.add_argument("--batch-size", type=int, default=8,
                       help="examples per batch: rows per forward and generation (hf); attack matcha attacks "
                            "this many examples together, in lock-step (same outcomes as 1)")
    group.add_argument("--max-memory", default=None, metavar="SIZE",
                       help="hf: the most memory this process should hold (4GB, 4GiB, 512MB); attack batches and "
                       "scoring chunks are planned to fit it and the memory available (default: what the host or "
                       "the device has free)")
    group.add_argument("--thinking", default=None, choices=("on", "off"),
                       help="a reasoning model's thinking switch: passed to its chat template as enable_thinking "
                       "(hf; refused where the template has none) or as chat_template_kwargs (openai, vLLM); "
                       "unset: the template's default (recorded in the run identity when set)")
    replaced = _replaced_flags()
    for flag, field in replaced.items():
        group.add_argument(flag, default=None, action=_ReplacedFlag, metavar=field.name,
                           choices=field.metadata.get("choices"),
                           help=f"deprecated: use --model-args {field.name}=VALUE")
    hide_flags(parser, replaced)  # out of --help; --help-all lists them
    add_executor_options(parser)


def _replaced_flags() -> dict[str, Any]:
    """``{flag: option field}`` of the backend flags ``--model-args`` replaced, of every registered backend."""
    from robusteval.models.options import option_fields, replaced_flags
    from robusteval.models.registry import backend_options_classes

    return {flag: option_fields(options_type)[name] for options_type in backend_options_classes().values()
            for flag, name in replaced_flags(options_type).items()}


class _ReplacedFlag(argparse.Action):
    """A backend flag that ``--model-args`` replaced: its value is taken as that option, with a one-line notice."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        import sys

        print(deprecated_flag(str(option_string), f"use --model-args {self.metavar}={values}"), file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    """Where the units of work run (every command that loads a model): in this process, or on Ray workers."""
    group = parser.add_argument_group("execution")
    group.add_argument("--executor", default="inprocess", choices=("inprocess", "ray"),
                       help="inprocess: everything in this process; ray: one worker per GPU (or CPU) of a Ray "
                       "cluster, each loading the models once; results are the same (recorded in info, not in "
                       "the run identity)")
    group.add_argument("--ray-address", default=None, metavar="auto|ADDRESS",
                       help="ray: the cluster to join (auto: the one `ray start` made here; ray://HOST:PORT); "
                       "default: a local cluster of this machine's GPUs and CPUs")
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help="ray: how many workers (default: one per GPU, else one per CPU)")
    add_threads_option(group)


def _threads_value(text: str) -> str:
    from robusteval.models.threads import parse_threads

    try:
        parse_threads(text)
    except UserError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--threads: ")) from None
    return text.strip().lower()


def add_threads_option(parser: argparse.ArgumentParser | Any) -> None:
    """``--threads``: torch's CPU threads in this process (read by ``cli.main`` before any model loads)."""
    parser.add_argument("--threads", type=_threads_value, default="auto", metavar="auto|N",
                        help="torch's CPU threads: auto = the cores this process may use less those other "
                        "processes keep busy (load average, a short /proc/stat sample), at least 1; N = exactly N "
                        "(also ROBUSTEVAL_THREADS; not part of the run identity)")


def executor_from_args(args: argparse.Namespace) -> Any:
    """The executor a command's flags ask for (in-process when it has none)."""
    from robusteval.errors import UserError
    from robusteval.executors import make_executor

    name = getattr(args, "executor", None) or "inprocess"
    address, workers = getattr(args, "ray_address", None), getattr(args, "workers", None)
    if name != "ray" and (address is not None or workers is not None):
        raise UserError(f"{'--ray-address' if address is not None else '--workers'} is for --executor ray")
    return make_executor(name, address=address, workers=workers)


#: The common options' flags (their dests are the options' names).
_COMMON_FLAGS = ("dtype", "device", "batch_size", "max_memory", "thinking")


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``load_model`` keywords of a command's flags: the common flags, ``--model-args`` typed by the backends'
    options classes and the replaced flags still given (``--model-args`` wins). Checked here, before any model
    loads: an option no backend takes, or a value that is not of its kind, is one line naming it."""
    from robusteval.models.registry import parse_model_args

    options = {name: getattr(args, name) for name in _COMMON_FLAGS if hasattr(args, name)}
    kind = str(getattr(args, "model", None) or "").partition(":")[0] or None
    for flag, field in _replaced_flags().items():
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is not None:
            options.update(parse_model_args({field.name: value}, kind=kind, what=flag))
    options.update(parse_model_args(getattr(args, "model_args", None), kind=kind))
    return options


def build_backend(spec: str, args: argparse.Namespace, **overrides: Any) -> Any:
    from robusteval.models import load_backend

    return load_backend(spec, **{**backend_options(args), **overrides})


def model_identity(spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """The normalised identity of ``spec`` under this command's options, before the model loads."""
    from robusteval.models.identity import describe_model

    return describe_model(spec, **backend_options(args))


def judge_loader(args: argparse.Namespace, shared: dict[str, Any]) -> Any:
    """Build judge backends with the run's options; a judge naming an already loaded model reuses it."""

    def load(spec: str) -> Any:
        if spec not in shared:
            shared[spec] = build_backend(spec, args)
        return shared[spec]

    return load


# ----------------------------------------------------------------------------------------------- runs
def add_out_option(parser: argparse.ArgumentParser, what: str = "run") -> None:
    """The required ``--out DIR`` of a command that writes a resumable ``what`` directory."""
    required_option(parser, "--out", metavar="DIR", help=f"{what} directory (re-run the same command to resume)")


@contextmanager
def open_model_run(
    args: argparse.Namespace, identity: dict[str, Any], info: dict[str, Any]
) -> Iterator[tuple[Any, Any]]:
    """``lifecycle.open_run`` on ``--out``: yields ``(store, backend)``, ``--model`` built with this command's
    backend options only after the identity check and the lock."""
    from robusteval.lifecycle import open_run

    with open_run(args.out, identity, info=info, load=lambda: build_backend(args.model, args)) as (store, backend):
        assert backend is not None  # open_run yields what load() returned
        yield store, backend


def print_run_dir(out: str) -> None:
    """The last line of a command that wrote a run: where it is and its summary."""
    print(f"run directory: {out}  (summary: {out}/summary.json)")


# ----------------------------------------------------------------------------------------------- data
def add_dataset_options(parser: argparse.ArgumentParser, datasets: list[str]) -> None:
    add_config_arguments(parser, DataSpec, choices={"dataset": datasets})


def data_spec(args: argparse.Namespace) -> DataSpec:
    return config_from_args(DataSpec, args)


# ----------------------------------------------------------------------------------------------- seeds
def add_seed_option(parser: argparse.ArgumentParser | Any, help: str = "random seed") -> None:
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=help)


def add_bootstrap_options(parser: argparse.ArgumentParser | Any, *, rounds_flag: str = "--bootstrap",
                          rounds: int = 2000) -> None:
    parser.add_argument(rounds_flag, type=int, default=rounds, help="bootstrap resamples of the 95%% CIs")
    parser.add_argument("--bootstrap-seed", type=int, default=DEFAULT_SEED,
                        help="seed of the bootstrap (independent of --seed)")



# ----------------------------------------------------------------------------------------------- attacks
def add_attack_parser(subparsers: Any, entry: Any, *, help_prefix: str = "", model_required: bool = True,
                      example: str | None = None) -> argparse.ArgumentParser:
    """A subcommand for the registered attack ``entry`` (``robusteval.attacks.base.ATTACKS``): its config's
    flags, the dataset choices of its data kind, the model options."""
    import textwrap

    from robusteval.data.spec import answer_first_datasets, classification_datasets

    attack = entry.value
    parser = add_command(subparsers, entry.name, help=help_prefix + entry.summary,
                         description=textwrap.dedent(attack.__doc__ or entry.summary).strip(),
                         example=example or attack.example)
    add_model_options(parser, required=model_required)
    datasets = answer_first_datasets() if attack.data_kind == "qa" else classification_datasets()
    add_config_arguments(parser, attack.config_type, choices={"dataset": datasets})
    return parser
