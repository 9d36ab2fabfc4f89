"""A result a method writes that is not a run (word-importance's ORS, ``ors.json``): what
:func:`robusteval.report.collect.collect` finds and reads (a method declares its kinds in
``MethodResults.result_files``). Kept apart from the rest of the results contract, which names the collected
inputs: ``collect`` reads these types, and the contract reads ``collect``'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from robusteval.report.model import Rate


class StoredResult(Protocol):
    """A result a method writes that is not a run (word-importance's ORS, ``ors.json``), as
    :func:`robusteval.report.collect.collect` reads it: in ``Inputs.results``, shown by its method's section and
    ranked by the board whose ``command`` is its ``kind``."""

    @property
    def path(self) -> Path: ...  # its file

    @property
    def kind(self) -> str: ...  # "ors": its board's ``command``, its run card's and results_frame's method

    def key(self) -> dict[str, str]: ...  # its comparability key

    def card(self) -> list[tuple[str, str]]: ...  # the fields of its card in the report

    def rates(self) -> list[tuple[str, Rate]]: ...  # (model, number): its rows of ``results_frame``


@dataclass(frozen=True)
class ResultFile:
    """A kind of result directory a method writes that is not a run: a directory holding ``name``."""

    name: str  # the file that marks it ("ors.json")
    #: ``load(directory, run directory -> the model name its caller gives that run)``: the result (a DataError
    #: when the file is not one)
    load: Callable[[Path, Mapping[str, str]], StoredResult]
