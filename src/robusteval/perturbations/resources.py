"""Optional resources: import on first use, and a missing extra is one sentence naming the install command."""

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


def install_hint(extra: str) -> str:
    return INSTALL_HINTS.get(extra, f"pip install 'robusteval[{extra}]'")


def require_module(module: str, extra: str, *, purpose: str) -> ModuleType:
    """Import ``module`` or raise a UserError naming the pip command of ``extra``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise UserError(f"{purpose} needs the '{module}' package; install it with: {install_hint(extra)}") from exc


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
