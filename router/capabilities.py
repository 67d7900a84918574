"""What each provider's server can do for structured output, learnt once per provider and model.

Many OpenAI-compatible servers (llama.cpp, LM Studio, older vLLM, some gateways) refuse
``response_format: json_schema``; some accept only ``json_object``, some neither. The HTTP
provider learns the best mode a server accepts the first time it refuses one (see
:mod:`router.providers.http`) and keeps it here, so later calls ask in that mode at once.
Learnt modes live in the shared provider-statistics SQLite file (their own table), so every
process and every later run starts from what was learnt; without a file they live in memory.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from plumbing.sqlite_files import connect
from router.providers.base import StructuredMode

_SCHEMA = """
CREATE TABLE IF NOT EXISTS structured_output (
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    mode TEXT NOT NULL,
    settled INTEGER NOT NULL,
    learnt_wall REAL NOT NULL,
    PRIMARY KEY (provider, model)
)
"""
_MODES: tuple[str, ...] = get_args(StructuredMode)


@dataclass(frozen=True, slots=True)
class Capability:
    """``mode``: how to ask; ``settled``: a refusal in this mode was found not to be about the
    schema, so no lower mode is tried again (a server that rejects everything costs one extra
    call per model, ever, not one per request)."""

    mode: StructuredMode
    settled: bool = False


class StructuredCapabilities:
    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._known: dict[tuple[str, str], Capability] = {}
        if path is not None and path.exists():
            self._load(path)

    def _connect(self, path: Path) -> sqlite3.Connection:
        conn = connect(path)
        conn.execute(_SCHEMA)
        return conn

    def _load(self, path: Path) -> None:
        try:
            conn = self._connect(path)
            try:
                rows = conn.execute(
                    "SELECT provider, model, mode, settled FROM structured_output"
                ).fetchall()
            finally:
                conn.close()
        except (OSError, sqlite3.Error):
            return  # an unreadable file only costs relearning; the stats store reports it
        for provider, model, mode, settled in rows:
            if mode in _MODES:
                self._known[(provider, model)] = Capability(mode, bool(settled))

    def get(self, provider: str, model: str) -> Capability | None:
        return self._known.get((provider, model))

    def modes(self, provider: str) -> dict[str, StructuredMode]:
        """The learnt mode of each model of ``provider`` (models never refused are absent)."""
        return {m: cap.mode for (p, m), cap in sorted(self._known.items()) if p == provider}

    def remember(self, provider: str, model: str, capability: Capability) -> None:
        if self._known.get((provider, model)) == capability:
            return
        self._known[(provider, model)] = capability
        if self._path is None:
            return
        try:
            conn = self._connect(self._path)
            try:
                with conn:
                    conn.execute(
                        "INSERT OR REPLACE INTO structured_output VALUES (?, ?, ?, ?, ?)",
                        (provider, model, capability.mode, int(capability.settled), time.time()),
                    )
            finally:
                conn.close()
        except (OSError, sqlite3.Error):
            pass  # kept in memory; the next process learns it again
