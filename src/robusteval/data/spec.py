"""Which data a run reads: a dataset format plus a file (or hub id), limit, field mapping and answer type."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from robusteval.config import ConfigError, check_choice, check_choices, check_positive, option, validated
from robusteval.data.example import Example


@validated
@dataclass(frozen=True)
class DataSpec:
    dataset: str = option(help="dataset format", flag="--dataset", metavar="NAME")
    data_file: str | None = option(None, help="the dataset file (for hf: a hub id or local dataset folder, "
                                              "hub_id[:config])", metavar="PATH")
    limit: int | None = option(None, help="use the first N examples (the whole file is still checked)")
    fields: str | None = option(None, metavar="OURS=THEIRS,…",
                                help="jsonl/csv/hf field mapping, e.g. question=problem,answer=solution,id=uid")
    answer_type: str | None = option(None, choices=("number", "yesno", "math", "text", "label"),
                                     help="jsonl/csv/hf: how answers are compared")
    split: str = option("test", help="hf: the dataset split")

    def __post_init__(self) -> None:
        from robusteval.data.loaders import dataset_kinds
        from robusteval.errors import UserError

        check_choice(self, "dataset", dataset_kinds())
        check_choices(self)
        check_positive(self, "limit")
        try:
            parse_fields(self.fields)
        except UserError as exc:
            raise ConfigError(self, "fields", str(exc)) from None

    def load(self) -> list[Example]:
        from robusteval.data.loaders import load_dataset

        return load_dataset(self.dataset, self.data_file, limit=self.limit, fields=parse_fields(self.fields),
                            answer_type=self.answer_type, split=self.split)

    def identity(self) -> dict[str, Any]:
        """Dataset name, path and content hash: what makes two runs' inputs the same (the limit is not:
        a run extended with a larger --limit resumes)."""
        from robusteval.store import file_sha256

        digest = file_sha256(self.data_file) if self.data_file and os.path.isfile(self.data_file) else None
        identity = {"dataset": self.dataset, "data_file": self.data_file, "data_sha256": digest, "fields": self.fields}
        if self.split != "test":
            identity["split"] = self.split
        return identity


def parse_fields(text: str | None) -> dict[str, str] | None:
    """``question=problem,answer=solution`` -> {"question": "problem", "answer": "solution"}."""
    from robusteval.errors import UserError

    if not text:
        return None
    mapping = {}
    for part in text.split(","):
        ours, eq, theirs = part.partition("=")
        if not eq or not ours.strip() or not theirs.strip():
            raise UserError(f"'{part}' is not OURS=THEIRS")
        mapping[ours.strip()] = theirs.strip()
    return mapping


def answer_first_datasets() -> list[str]:
    """Dataset formats with questions and gold answers (eval, MATCHA): the registered loaders whose answers
    are not class labels, plus the generic formats."""
    from robusteval.data.loaders import dataset_kinds

    return [name for name, kind in dataset_kinds().items() if kind in ("qa", "generic") and name != "examples"]


def classification_datasets() -> list[str]:
    """Dataset formats with a text and a label (robustness, word-importance attacks)."""
    from robusteval.data.loaders import dataset_kinds

    return [name for name, kind in dataset_kinds().items() if kind in ("label", "generic")]
