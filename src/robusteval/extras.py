"""Optional dependencies: import on first use; a missing one is one sentence naming the install command.

Every optional package robusteval imports is listed once in :data:`MODULE_EXTRAS` with the extra that
installs it, so both the import sites and the CLI's last-resort error handler give the same advice.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

# The table of extras and the missing-package error live in errors.py (environment_error needs them there);
# they are re-exported here, where optional dependencies are imported.
from robusteval.errors import INSTALL_HINTS as INSTALL_HINTS
from robusteval.errors import MODULE_EXTRAS, UserError, install_hint, missing_module_error


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
