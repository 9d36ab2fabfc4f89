"""The SQLite run store: run config, units of work, summary."""

from robusteval.store.files import write_jsonl_atomic, write_text_atomic
from robusteval.store.lock import RunLock
from robusteval.store.sqlite import DB_NAME, SUMMARY_NAME, RunStore, canonical_json, file_sha256, unit_key

__all__ = [
    "DB_NAME",
    "SUMMARY_NAME",
    "RunLock",
    "RunStore",
    "canonical_json",
    "file_sha256",
    "unit_key",
    "write_jsonl_atomic",
    "write_text_atomic",
]
