"""Environment failures become one actionable sentence (the CLI prints it and exits 2); bugs do not."""

from __future__ import annotations

import errno
import sqlite3

import pytest
import torch

from robusteval.errors import UserError, environment_error


def test_cuda_and_cpu_out_of_memory_suggest_a_smaller_batch() -> None:
    # torch raises this class for CUDA (and MPS) allocation failures; it cannot be provoked without a GPU.
    cuda = environment_error(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0)"))
    assert cuda is not None and "out of GPU memory" in str(cuda) and "--batch-size" in str(cuda)
    cpu = environment_error(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9"))
    assert cpu is not None and "out of main (CPU) memory" in str(cpu)
    assert "main (CPU) memory" in str(environment_error(MemoryError()))


def test_disk_and_permission_errors_name_the_file() -> None:
    full = environment_error(OSError(errno.ENOSPC, "No space left on device", "/runs/x/summary.json"))
    assert full is not None and "no space left on the device writing /runs/x/summary.json" in str(full)
    assert "disk is full" not in str(environment_error(sqlite3.OperationalError("database or disk is full")))
    denied = environment_error(PermissionError(errno.EACCES, "Permission denied", "/runs/x"))
    assert denied is not None and "cannot write /runs/x: permission denied" in str(denied)
    read_only = environment_error(OSError(errno.EROFS, "Read-only file system", "/mnt/ro/run"))
    assert read_only is not None and "read-only" in str(read_only)


def test_missing_module_names_the_extra() -> None:
    error = environment_error(ModuleNotFoundError("No module named 'pypinyin'", name="pypinyin"))
    assert error is not None and "pip install 'robusteval[zh]'" in str(error)
    unknown = environment_error(ModuleNotFoundError("No module named 'frob'", name="frob"))
    assert unknown is not None and "pip install frob" in str(unknown)


@pytest.mark.parametrize("bug", [ZeroDivisionError("x"), KeyError("k"), RuntimeError("shape mismatch"),
                                 OSError(errno.EIO, "Input/output error")])
def test_bugs_and_unknown_failures_are_not_disguised(bug: BaseException) -> None:
    assert environment_error(bug) is None


def test_user_errors_pass_through() -> None:
    error = UserError("bad flag")
    assert environment_error(error) is error
