"""Errors a user can act on. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations


class UserError(Exception):
    """Bad input or configuration: the message names the file, line and field where known."""

    exit_code = 2


class DataError(UserError):
    """A data file that cannot be read as the declared format."""

    def __init__(self, path: object, message: str, line: int | None = None, field: str | None = None):
        where = str(path)
        if line is not None:
            where += f":{line}"
        if field is not None:
            message = f"field '{field}': {message}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.field = field


class BackendError(UserError):
    """A model backend failed in a way retries cannot fix (server down after retries, bad spec)."""
