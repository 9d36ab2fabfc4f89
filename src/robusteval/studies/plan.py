"""A study file (TOML) read into a plan: models x methods x datasets, every cell's config built and checked.

Everything a user can get wrong is refused here, before any model loads, in one line naming the file, the line
and the field (``study.toml:14: methods.matcha.stepz: unknown option (did you mean steps?)``): unknown keys, values
of the wrong type, values a config's ``__post_init__`` refuses, datasets a method cannot read, missing files.
Method options are the fields of the method's config (the names of its command's flags, ``-`` or ``_``), nested
configs flattened as on the command line; a dataset's keys fill the same config (a method's keys win).

Relative paths (``data_file``, ``instances``, ``template``, set files, ``hf:./model``) are read relative to the
study file when that path exists there, else as given (relative to the working directory); ``out`` is always
relative to the study file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from robusteval.config import ConfigError, did_you_mean
from robusteval.errors import UserError
from robusteval.methods import StudyTable, load_reference, methods
from robusteval.studies.methods import Method, dataset_choices, get_method, method_names
from robusteval.studies.options import (
    MissingOption,
    instantiate,
    negated_flags,
    option_fields,
    shared_blocks_flat,
    typed_value,
)

#: Keys of the file's top level, besides the tables registered methods read (``MethodSpec.study_table``:
#: word-importance's ``[ors]``, the constants of its ORS).
BASE_KEYS = ("title", "out", "batch_size", "models", "datasets", "methods")
#: Keys of a ``[[models]]`` entry besides the load options (the fields of the backend's options class,
#: ``robusteval.models.options``: ``load_model``'s keywords and ``--model-args``' keys).
MODEL_KEYS = ("spec", "name")
#: Keys of a ``[methods.NAME]`` table besides the method's options.
METHOD_KEYS = ("kind", "datasets")
#: Fields that name files (or, for template and exemplars, a file or a built-in name), resolved against the study
#: file's folder when the file is there.
PATH_FIELDS = ("data_file", "instances", "template", "exemplars", "vectors")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class ModelEntry:
    name: str
    spec: str
    options: dict[str, Any]  # load options (``robusteval.load_model`` keywords)


@dataclass(frozen=True)
class Cell:
    """One (model, method, dataset): one ordinary run directory ``<out>/<model>/<method>/<dataset>``."""

    model: ModelEntry
    method_name: str  # the ``[methods.NAME]`` table
    method: Method
    dataset: str
    config: Any

    @property
    def id(self) -> str:
        return f"{self.model.name}/{self.method_name}/{self.dataset}"

    def key(self, identity: Mapping[str, Any]) -> str:
        """What the cell is: its run identity and every option (also those outside the identity, such as a
        robustness run's sets): a finished cell with the same key is not run again."""
        blob = json.dumps({"identity": identity, "config": dataclasses.asdict(self.config)}, sort_keys=True,
                          default=str)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True)
class StudyPlan:
    path: str  # the study file ("<mapping>" for a study given as a dict)
    title: str
    out: Path
    batch_size: int
    models: list[ModelEntry]
    cells: list[Cell]
    #: the study file's tables registered methods read (``MethodSpec.study_table``), by name: ``[ors]``
    tables: dict[str, dict[str, Any]]


class TomlWhere:
    """File and line of a key, for the one-line errors (tomllib keeps no positions: the text is searched). Also
    what the command line's ``--config`` files are read with."""

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line(self, header: str | None = None, key: str | None = None, occurrence: int = 0) -> int | None:
        start, end = 0, len(self.lines)
        if header is not None:
            found = [i for i, line in enumerate(self.lines) if _header_matches(line, header)]
            if len(found) <= occurrence:
                return None
            start = found[occurrence]
        following = [i for i in range(start + 1, len(self.lines)) if self.lines[i].lstrip().startswith("[")]
        end = following[0] if following else end
        if key is None:
            return start + 1 if header is not None else None
        names = {key, key.replace("_", "-"), key.replace("-", "_")}
        pattern = re.compile(r"^\s*[\"']?(" + "|".join(map(re.escape, names)) + r")[\"']?\s*=")
        for i in range(start, end):
            if pattern.match(self.lines[i]):
                return i + 1
        return start + 1 if header is not None else None

    def error(self, problem: str, header: str | None = None, key: str | None = None, occurrence: int = 0,
              field: str | None = None) -> UserError:
        line = self.line(header, key, occurrence)
        where = f"{self.path}:{line}" if line else self.path
        return UserError(f"{where}: {field + ': ' if field else ''}{problem}")


def _header_matches(line: str, header: str) -> bool:
    text = line.split("#", 1)[0].strip().replace('"', "").replace("'", "").replace(" ", "")
    return text == header


def load_study(source: str | os.PathLike[str] | Mapping[str, Any], *, base: str | os.PathLike[str] | None = None
               ) -> StudyPlan:
    """Read and check a study: a TOML file, or its content as a mapping (relative paths then against ``base``,
    default the working directory)."""
    if isinstance(source, Mapping):
        where, data, folder = TomlWhere("<study>", ""), dict(source), Path(base or ".")
        default_out = folder / "study"
    else:
        file = Path(source)
        if not file.is_file():
            raise UserError(f"{file}: no such study file")
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"{file}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise UserError(f"{file}: invalid TOML: {exc}") from None
        where, folder, default_out = TomlWhere(str(file), text), file.parent, file.with_suffix("")
    return _plan(data, where, folder, default_out)


def _plan(data: dict[str, Any], where: TomlWhere, folder: Path, default_out: Path) -> StudyPlan:
    tables = study_tables()
    _known(where, data, (*BASE_KEYS, *(table.name for table in tables)), None, "study")
    batch_size = data.get("batch_size", 8)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise where.error(f"must be a whole number >= 1, got {batch_size!r}", key="batch_size", field="batch_size")
    title = data.get("title", "robusteval study")
    if not isinstance(title, str):
        raise where.error("must be a string", key="title", field="title")
    out = data.get("out")
    if out is not None and not isinstance(out, str):
        raise where.error("must be a folder path (a string)", key="out", field="out")
    options = {table.name: _method_table(where, data, table) for table in tables}
    models = _models(where, data, folder)
    datasets = _table(where, data, "datasets", None)
    methods = _table(where, data, "methods", None)
    if not datasets:
        raise where.error("declare at least one [datasets.NAME] table", field="datasets")
    if not methods:
        raise where.error("declare at least one [methods.NAME] table (a method: "
                          f"{', '.join(method_names())})", field="methods")
    for name, table in datasets.items():
        header = f"[datasets.{name}]"
        _name_ok(where, name, header, "dataset")
        if not isinstance(table, dict):
            raise where.error("must be a table of options", header=header, field=f"datasets.{name}")
    cells: list[Cell] = []
    per_method: list[tuple[str, Method, str, Any]] = []
    for name, table in methods.items():
        per_method += _method_configs(where, name, table, datasets, folder)
    for model in models:
        cells += [Cell(model, name, method, dataset, config) for name, method, dataset, config in per_method]
    # ``out`` is made by the study: always relative to the study file (a data path may be relative to the caller)
    root = Path(os.path.abspath(folder / Path(out).expanduser())) if out else default_out
    return StudyPlan(where.path, title, root, batch_size, models, cells, options)


def study_tables() -> list[StudyTable]:
    """The top-level tables of a study file that registered methods read, in the methods' order."""
    return [spec.study_table for spec in methods() if spec.study_table is not None]


def _method_table(where: TomlWhere, data: Mapping[str, Any], table: StudyTable) -> dict[str, Any]:
    """A method's top-level table (``[ors]``), its keys and values checked now by the method (what reads it runs
    after the cells)."""
    header = f"[{table.name}]"
    options = _table(where, data, table.name, header)
    _known(where, options, table.keys, header, table.name)
    if table.check is not None:
        check = load_reference(table.check, f"method study table {header}")
        try:
            check(options)
        except ConfigError as exc:
            problem = str(exc).split(": ", 1)[1]
            raise where.error(problem, header=header, key=exc.field, field=f"{table.name}.{exc.field}") from None
    return options


def _known(where: TomlWhere, table: Mapping[str, Any], known: Sequence[str], header: str | None, section: str,
           occurrence: int = 0) -> None:
    for key in table:
        if key not in known:
            raise where.error(f"unknown key{did_you_mean(key, known)}; known: {', '.join(known)}", header=header, key=key,
                              occurrence=occurrence, field=f"{section}.{key}" if section != "study" else key)


def _table(where: TomlWhere, data: Mapping[str, Any], key: str, header: str | None) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise where.error("must be a table", header=header, key=key, field=key)
    return value


def _name_ok(where: TomlWhere, name: str, header: str, what: str, occurrence: int = 0, key: str | None = None) -> None:
    if not _NAME.match(name):
        raise where.error(f"{what} name {name!r}: use letters, digits, '.', '_' and '-' (it names a folder)",
                          header=header, key=key, occurrence=occurrence, field=what)


def _resolve(value: str, folder: Path) -> str:
    """``value`` against the study file's folder when that path exists there, else as given."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return str(path)
    candidate = Path(os.path.abspath(folder / path))  # not resolve(): a linked model keeps its own name
    return str(candidate) if candidate.exists() else value


def _models(where: TomlWhere, data: Mapping[str, Any], folder: Path) -> list[ModelEntry]:
    from robusteval.models.registry import OptionError, parse_spec, resolve_options
    from robusteval.report.collect import short_model
    from robusteval.studies.sweep import slug

    entries = data.get("models")
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise where.error("declare at least one [[models]] entry with a spec", field="models")
    models: list[ModelEntry] = []
    for i, entry in enumerate(entries):
        header = "[[models]]"
        spec = entry.get("spec")
        if not isinstance(spec, str) or not spec:
            raise where.error("missing spec (hf:/path, openai:MODEL@URL, ...)", header=header, occurrence=i,
                              field=f"models[{i}].spec")
        options = {k: v for k, v in entry.items() if k not in MODEL_KEYS}
        try:
            parsed = parse_spec(spec)
            resolve_options(spec, options)
        except OptionError as exc:
            raise where.error(str(exc), header=header, key=exc.option, occurrence=i, field=f"models[{i}]") from None
        except UserError as exc:
            raise where.error(str(exc), header=header, key="spec", occurrence=i, field=f"models[{i}]") from None
        if parsed.kind == "hf" and parsed.target.startswith((".", "~")):
            spec = f"hf:{_resolve(parsed.target, folder)}"
        # Default: the model's short name as reports show it (``llama-3-8b``, ``run-1/checkpoint-500``).
        name = entry.get("name") or slug({"m": short_model(spec)})[2:]
        if not isinstance(name, str):
            raise where.error("must be a string", header=header, key="name", occurrence=i, field=f"models[{i}].name")
        _name_ok(where, name, header, "model", i, key="name")
        if name in {m.name for m in models}:
            raise where.error(f"model name {name!r} is used twice; give each [[models]] entry its own name",
                              header=header, key="name", occurrence=i, field=f"models[{i}].name")
        models.append(ModelEntry(name, spec, options))
    return models


def _method_configs(where: TomlWhere, name: str, table: Any, datasets: Mapping[str, dict[str, Any]], folder: Path
                    ) -> list[tuple[str, Method, str, Any]]:
    header = f"[methods.{name}]"
    _name_ok(where, name, header, "method")
    if not isinstance(table, dict):
        raise where.error("must be a table of options", header=header, field=f"methods.{name}")
    kind = table.get("kind", name)
    method = get_method(kind) if isinstance(kind, str) else None
    if method is None:
        raise where.error(f"no method {kind!r}{did_you_mean(str(kind), method_names())}; methods: "
                          f"{', '.join(method_names())} (a table named otherwise says which with kind = \"...\")",
                          header=header, key="kind" if "kind" in table else None,
                          field=f"methods.{name}")
    chosen = table.get("datasets", list(datasets) if len(datasets) == 1 else None)
    if isinstance(chosen, str):
        chosen = [chosen]
    if not isinstance(chosen, list) or not chosen:
        raise where.error(f"say which datasets it runs on: datasets = [...] (declared: {', '.join(datasets)})",
                          header=header, key="datasets", field=f"methods.{name}.datasets")
    fields = option_fields(method.config_type)
    options = shared_blocks_flat(method.config_type, {k: v for k, v in table.items() if k not in METHOD_KEYS})
    for key in options:
        _check_key(where, key, fields, header, f"methods.{name}", method)
    out = []
    for dataset in chosen:
        if dataset not in datasets:
            raise where.error(f"no dataset {dataset!r}; declared: {', '.join(datasets)}", header=header,
                              key="datasets", field=f"methods.{name}.datasets")
        dheader = f"[datasets.{dataset}]"
        for key in datasets[dataset]:
            _check_key(where, key, fields, dheader, f"datasets.{dataset}", method)
        values = {**datasets[dataset], **options}
        source = {k: (dheader, f"datasets.{dataset}") for k in datasets[dataset]}
        source.update({k: (header, f"methods.{name}") for k in options})
        config = _build(where, method, fields, values, source, folder, f"methods.{name} on dataset {dataset}",
                        (header, f"methods.{name}"))
        _check_dataset(where, method, config, source, dataset)
        out.append((name, method, dataset, config))
    return out


def _check_key(where: TomlWhere, key: str, fields: Mapping[str, Any], header: str, section: str, method: Method
               ) -> None:
    if key.replace("-", "_") in fields:
        return
    hint = did_you_mean(key.replace("-", "_"), fields)
    raise where.error(f"unknown option of method {method.name}{hint}; options: {', '.join(sorted(fields))}",
                      header=header, key=key, field=f"{section}.{key}")


def _build(where: TomlWhere, method: Method, fields: Mapping[str, tuple[tuple[str, ...], Any]],
           values: Mapping[str, Any], source: Mapping[str, tuple[str, str]], folder: Path, what: str,
           method_header: tuple[str, str]) -> Any:
    """The method's config from the flat ``values`` (each key's ``source``: its table), checked as built."""
    tree: dict[str, Any] = {}
    negated = negated_flags(method.config_type)
    for key, value in values.items():
        name = key.replace("-", "_")
        path, annotation = fields[name]
        header, section = source[key]
        try:
            typed = typed_value(value, annotation)
        except ValueError as exc:
            raise where.error(str(exc), header=header, key=key, field=f"{section}.{key}") from None
        if name in negated:
            name, typed = negated[name], not typed
        if name in PATH_FIELDS and isinstance(typed, str):
            typed = _resolve(typed, folder)
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node[name] = typed
    for name in method.named_paths:  # NAME=FILE entries: their files are paths too
        if name in tree:
            tree[name] = ",".join(_resolve_set(s, folder) for s in _split(tree[name]))
    try:
        return instantiate(method.config_type, tree)
    except ConfigError as exc:
        header, section = source.get(exc.field, source.get(exc.field.replace("_", "-"), method_header))
        problem = str(exc).split(": ", 1)[1] if ": " in str(exc) else str(exc)
        raise where.error(problem, header=header, key=exc.field, field=f"{section}.{exc.field}") from None
    except UserError as exc:
        raise where.error(f"{what}: {exc}", header=method_header[0], field=method_header[1]) from None
    except MissingOption as exc:
        raise where.error(f"{what}: missing option '{exc.args[0]}' (give it in [methods.…] or [datasets.…])",
                          header=method_header[0], field=method_header[1]) from None


def _split(value: Any) -> list[str]:
    return [str(v).strip() for v in (value.split(",") if isinstance(value, str) else value) if str(v).strip()]


def _resolve_set(entry: str, folder: Path) -> str:
    name, eq, file = entry.partition("=")
    return f"{name}={_resolve(file, folder)}" if eq else entry


def _check_dataset(where: TomlWhere, method: Method, config: Any, source: Mapping[str, tuple[str, str]],
                   dataset: str) -> None:
    """The dataset suits the method (a format its command offers) and its files can be read, now."""
    if method.data_kind != "instances":
        choices = dataset_choices(method.data_kind)
        if config.data.dataset not in choices:
            header, section = source.get("dataset", (f"[datasets.{dataset}]", f"datasets.{dataset}"))
            raise where.error(f"{config.data.dataset!r} is not a dataset format method {method.name} reads "
                              f"({', '.join(choices)})", header=header, key="dataset", field=f"{section}.dataset")
    try:
        method.examples(config)
    except UserError as exc:
        raise where.error(f"dataset {dataset} for method {method.name}: {exc}", header=f"[datasets.{dataset}]",
                          field=f"datasets.{dataset}") from None


def run_dir(root: Path, cell: Cell) -> Path:
    """The run directory of ``cell`` in the study directory ``root``: ``<model>/<method>/<dataset>``."""
    return root / cell.model.name / cell.method_name / cell.dataset
