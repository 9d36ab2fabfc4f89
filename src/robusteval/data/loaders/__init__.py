"""Dataset loaders and their registry.

Every loader turns one source (a file, or a Hugging Face hub dataset) into a list of :class:`Example`.
Loaders register by decorator (``@register_dataset(name, answer_type)``) and are reached through
:func:`load_dataset`; nothing is looked up with ``eval``.

Bad input never surfaces as a traceback: every problem becomes a one-line :class:`DataError` naming the file,
the 1-based line and the field. A file is always read and checked whole, also with ``limit`` (its content hash
covers the whole file anyway): a run that reads 3 examples and one that reads 10 accept the same files.

Modules: :mod:`.registry` (``register_dataset``, ``load_dataset``), :mod:`.files` (line-accurate readers and
the streaming JSON scanner), :mod:`.fields` (field checks, gold-answer normalisation, the generic field mapping),
:mod:`.benchmarks` (gsm8k, singleeq, strategyqa, ocnli) and :mod:`.generic` (jsonl, csv, hf, examples).
Importing this package registers every built-in loader.

Every name this module held before it became a package is still importable from here (the registry itself,
``DATASETS``, lives in :mod:`.registry`).
"""

# Besides the public API (``__all__``), the private helpers are re-exported (hence the noqa): whatever was
# importable from robusteval.data.loaders before the split still is. Importing the loader modules registers
# them.
from robusteval.data.loaders.benchmarks import (  # noqa: F401
    _OCNLI_LABELS,
    _load_gsm8k,
    _load_ocnli,
    _load_singleeq,
    _load_strategyqa,
    _strategyqa_example,
)
from robusteval.data.loaders.fields import (  # noqa: F401
    _ANSWER_TYPES,
    _NO,
    _YES,
    DEFAULT_FIELDS,
    _answer,
    _done,
    _format_number,
    _generic_example,
    _ident,
    _Ids,
    _Loc,
    _nonempty,
    _number,
    _require,
    _resolve_fields,
    _text,
    _type_name,
)
from robusteval.data.loaders.files import (  # noqa: F401
    _DECODER,
    _WS,
    _check_file,
    _iter_jsonl,
    _iter_text_lines,
    _json_error,
    _JsonScanner,
    _LineIndex,
    _read_text,
    iter_jsonl,
    read_json,
)
from robusteval.data.loaders.generic import _load_csv, _load_examples, _load_hf, _load_jsonl  # noqa: F401
from robusteval.data.loaders.registry import (  # noqa: F401
    DATA_DIR_ENV,
    DATASETS,
    DatasetLoader,
    _default_path,
    _Entry,
    dataset_kinds,
    dataset_names,
    load_dataset,
    register_dataset,
)

__all__ = [
    "DATASETS",
    "DATA_DIR_ENV",
    "DEFAULT_FIELDS",
    "DatasetLoader",
    "dataset_names",
    "iter_jsonl",
    "load_dataset",
    "read_json",
    "register_dataset",
]
