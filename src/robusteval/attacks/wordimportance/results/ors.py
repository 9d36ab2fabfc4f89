"""ORS results as the report reads them: an ``ors.json`` directory (written by ``robusteval ors`` or a study:
:mod:`robusteval.attacks.wordimportance.ors`), its models' scores with n and interval, its comparability key, its
rows of ``results_frame``, and the study's ORS column over every model's word-importance cell."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from robusteval.errors import DataError
from robusteval.report.collect import _expect, _expect_number, _read_json, short_model
from robusteval.report.comparability import _text
from robusteval.report.method_results import ExtraColumn
from robusteval.report.model import Num, Rate
from robusteval.report.stored import ResultFile
from robusteval.runs import Run

#: The file ``robusteval ors`` writes (``ors.OUTPUT_NAME``: tests/attacks/test_wordimportance_registration.py).
ORS_NAME = "ors.json"
#: The kind of an ORS result: its board's ``command``, results_frame's method, its card in the report.
KIND = "ors"


@dataclass(frozen=True)
class OrsResult:
    path: Path  # the ors.json file
    data: dict[str, Any]
    #: the model names of ors.json -> the names their runs were given (``collect``'s ``names``)
    names: Mapping[str, str] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return KIND

    def model(self, name: str) -> str:
        """How model ``name`` of ors.json is shown: the name its runs were given, else its short name."""
        return self.names.get(name) or short_model(name)

    def key(self) -> dict[str, str]:
        """An ORS result's key: models are scored together only inside one result (one β for all of them)."""
        data = self.data
        return {name: _text(value) for name, value in (("method", KIND), ("result", str(self.path)),
                                                          ("rates", data.get("rates")), ("q", data.get("q")),
                                                          ("eta", data.get("eta")))}

    def card(self) -> list[tuple[str, str]]:
        return [(name, str(self.data.get(name))) for name in ("beta", "q", "eta")]

    def rates(self) -> list[tuple[str, Rate]]:
        """(model, its ORS): a score over the attacked examples (n) with its bootstrap interval."""
        return [(short_model(model), Rate("ors", ors_score(self, model), "n_attacked"))
                for model in self.data.get("ors") or {}]


def ors_score(result: OrsResult, model: str) -> Num:
    """A model's ORS with n (its attacked examples over the methods) and its bootstrap interval over them; an
    ors.json written before ORS had them shows neither."""
    data = result.data
    n = (data.get("n") or {}).get(model)
    by_method = (data.get("n_by_method") or {}).get(model) or {}
    minimum = (data.get("bootstrap") or {}).get("min_attacked")
    few = [f"{method} n={count}" for method, count in by_method.items() if minimum and count < minimum]
    return Num((data.get("ors") or {}).get(model), n=n, ci=(data.get("ci95") or {}).get(model), digits=2,
               runs=(str(result.path),),
               note="mean rs over the methods; interval: bootstrap over the attacked examples"
                    + (f" ({', '.join(f'{m} n={c}' for m, c in by_method.items())})" if by_method else ""),
               caveat=f"few attacked examples: {', '.join(few)} < {minimum}" if few else "")


def check_ors(path: Path, data: dict[str, Any]) -> None:
    """The shape of an ors.json the report reads (as :func:`robusteval.attacks.wordimportance.ors.ors` writes
    it), or a DataError."""
    for key in ("rates", "success_percent", "ors"):
        if key not in data:
            raise DataError(path, "missing field", field=key)
    _expect(path, data["rates"], list, "rates")
    for model, score in _expect(path, data["ors"], dict, "ors").items():
        _expect_number(path, score, f"ors.{model}")
    for model, by_method in _expect(path, data["success_percent"], dict, "success_percent").items():
        for method, percents in _expect(path, by_method, dict, f"success_percent.{model}").items():
            _expect(path, percents, list, f"success_percent.{model}.{method}")
    for key in ("rs", "oad", "runs"):
        table = _expect(path, data.get(key), dict, key, optional=True) or {}
        for model, by_method in table.items():
            for method, value in _expect(path, by_method, dict, f"{key}.{model}").items():
                if key == "runs":
                    _expect(path, value, str, f"runs.{model}.{method}")
                elif key == "rs":
                    _expect_number(path, value, f"rs.{model}.{method}")


def load_ors(path: Path, names: Mapping[str, str] | None = None) -> OrsResult:
    """The ORS result of directory ``path``, knowing its models' given names (``names``: run directory -> the
    name its caller gives it, matched through the run directories ors.json records)."""
    data = _read_json(path / ORS_NAME)
    check_ors(path / ORS_NAME, data)
    known = {}
    for model, methods in (data.get("runs") or {}).items():
        given = {(names or {}).get(str(Path(str(run)).resolve())) for run in (methods or {}).values()} - {None}
        if len(given) == 1:
            known[model] = str(given.pop())
    return OrsResult(path / ORS_NAME, data, known)


#: How ``collect`` finds ORS results.
ORS_FILE = ResultFile(ORS_NAME, load_ors)


def ors_results(results: Any) -> list[OrsResult]:
    """The ORS results among ``Inputs.results``."""
    return [result for result in results if isinstance(result, OrsResult)]


def study_columns(runs: dict[str, Run], out_dir: Path, options: dict[str, object]) -> list[ExtraColumn]:
    """ORS over every model's word-importance cell of one (method table, dataset) of a study (one β for all of
    them), written to ``out_dir/ors.json``; ``options``: the study's ``[ors]`` constants."""
    from robusteval.attacks.wordimportance.ors import OrsConfig, ors

    result = ors(OrsConfig(tuple(str(run.path) for run in runs.values()), out=str(out_dir), **options))  # type: ignore[arg-type]
    loaded = load_ors(out_dir)
    by_dir = {str(run.path): model for model, run in runs.items()}
    cells: dict[str, Num] = {}
    for summary_model, methods in result.sources.items():  # the summaries' model names -> the study's
        cells[by_dir[next(iter(methods.values()))]] = ors_score(loaded, summary_model)
    return [ExtraColumn("ors", "higher", cells, str(out_dir),
                        note=f"beta={result.result.beta}; a score over the success rates, "
                             "interval: bootstrap over the attacked examples",
                        untested="ORS is a score over the success rates: no per-example outcomes")]
