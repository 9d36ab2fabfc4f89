"""Options and helpers shared by several commands (model, dataset, output)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from robusteval.cli.main import required_option
from robusteval.data.example import Example
from robusteval.errors import UserError
from robusteval.models import Backend, load_backend


def add_model_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    help_text = "model spec: hf:/path/or/hub-id, hf:/path/model.gguf or openai:MODEL@http://host:port/v1"
    if required:
        required_option(parser, "--model", metavar="SPEC", help=help_text)
    else:
        parser.add_argument("--model", metavar="SPEC", help=help_text)
    add_backend_options(parser)


def add_backend_options(parser: argparse.ArgumentParser) -> None:
    """How models are run (dtype, device, batching, API settings), for every model a command loads."""
    group = parser.add_argument_group("model backend")
    group.add_argument("--dtype", default="auto", help="hf: auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16")
    group.add_argument("--device", default="auto", help="hf: auto, cpu, cuda, cuda:1, …")
    group.add_argument("--batch-size", type=int, default=8, help="examples per batch (hf) ")
    group.add_argument("--max-concurrency", type=int, default=8, help="openai: parallel requests")
    group.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: environment variable holding the key")
    group.add_argument("--request-timeout", type=float, default=60.0, help="openai: seconds per request")


def backend_options(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "dtype": args.dtype,
        "device": args.device,
        "batch_size": args.batch_size,
        "max_concurrency": args.max_concurrency,
        "api_key_env": args.api_key_env,
        "timeout": args.request_timeout,
    }


def build_backend(spec: str, args: argparse.Namespace, **overrides: Any) -> Backend:
    return load_backend(spec, **{**backend_options(args), **overrides})


def add_dataset_options(parser: argparse.ArgumentParser, datasets: list[str]) -> None:
    required_option(parser, "--dataset", choices=datasets, help="dataset format")
    parser.add_argument("--data-file", metavar="PATH", help="the dataset file (for hf: hub_id[:config])")
    parser.add_argument("--limit", type=int, default=None, help="use the first N examples")
    parser.add_argument(
        "--fields",
        default=None,
        metavar="OURS=THEIRS,…",
        help="jsonl/csv/hf field mapping, e.g. question=problem,answer=solution,id=uid",
    )
    parser.add_argument("--answer-type", default=None, choices=["number", "yesno", "math", "text", "label"],
                        help="jsonl/csv/hf: how answers are compared")


def parse_fields(text: str | None) -> dict[str, str] | None:
    if not text:
        return None
    mapping = {}
    for part in text.split(","):
        ours, eq, theirs = part.partition("=")
        if not eq or not ours.strip() or not theirs.strip():
            raise UserError(f"--fields: '{part}' is not OURS=THEIRS")
        mapping[ours.strip()] = theirs.strip()
    return mapping


def load_examples(args: argparse.Namespace) -> list[Example]:
    from robusteval.data.loaders import load_dataset

    if args.limit is not None and args.limit <= 0:
        raise UserError("--limit must be a positive number")
    return load_dataset(
        args.dataset,
        args.data_file,
        limit=args.limit,
        fields=parse_fields(args.fields),
        answer_type=args.answer_type,
    )


def data_identity(args: argparse.Namespace) -> dict[str, Any]:
    """Dataset name, path and content hash: what makes two runs' inputs the same."""
    from robusteval.store import file_sha256

    path = args.data_file
    digest = file_sha256(path) if path and os.path.isfile(path) else None
    return {"dataset": args.dataset, "data_file": path, "data_sha256": digest, "fields": args.fields}
