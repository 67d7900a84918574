"""The sentence encoder's vectors, remembered on this machine by the text they encode.

Encoding costs about 30 ms of CPU a text (research/sentence_encoder.py) and the same texts come
back: the default corpus is built anew in every workspace from the same installed documentation
(its ~400 heads are ~12 s of CPU), a collection indexed in a second workspace has the same heads,
a question is asked again. So the vectors are kept in one SQLite file in the user cache dir
(``sentence-vectors.sqlite`` in :func:`plumbing.app_dirs.cache_folder`), keyed by the SHA-256
of the encoder's identity (:data:`~research.sentence_encoder.ENCODER_ID`) and the text: a vector
found is exactly the one this encoder computes for this text, never one of another model or of
an older text. A corpus file keeps its own heads too (research/document_heads.py); this memo is
what spares the encoder when a file is new.

The file holds at most :data:`MAX_VECTORS` vectors (about 150 MB); the oldest written go first.
A memo that cannot be opened, read or written (a read-only home, a full disk, a lock held past
the busy timeout, a damaged file) only costs time: the vectors are computed and used all the
same, and nothing is raised.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence

import numpy as np

from plumbing.app_dirs import cache_folder
from plumbing.sqlite_files import connect, wal_pragmas
from research.sentence_encoder import DIMENSIONS, ENCODER_ID, Vectors, sentence_encoder

MEMO_FILE = "sentence-vectors.sqlite"
MAX_VECTORS = 100_000
"""Vectors the memo keeps (1.5 KB each): every head and passage of several large corpora."""
BUSY_TIMEOUT_S = 2.0
"""How long a read or write waits for another process's lock before it gives up (and the
vectors are computed instead, or not remembered)."""
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS sentence_vectors ("
    " id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, vector BLOB NOT NULL)"
)
_writing = threading.Lock()


def encode(texts: Sequence[str]) -> Vectors:
    """Each text's unit vector, in the given order: remembered ones read, the others encoded
    (in one batch) and remembered."""
    keys = [_key(text) for text in texts]
    found = _read(list(dict.fromkeys(keys)))
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    if missing:
        text_of = dict(zip(keys, texts))
        computed = sentence_encoder().encode([text_of[k] for k in missing])
        found.update(zip(missing, computed))
        _write([(k, computed[n].tobytes()) for n, k in enumerate(missing)])
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    for n, key in enumerate(keys):
        out[n] = found[key]
    return out


def _key(text: str) -> bytes:
    return hashlib.sha256(f"{ENCODER_ID}\0{text}".encode("utf-8", "surrogatepass")).digest()


def _open() -> sqlite3.Connection:
    db = connect(cache_folder() / MEMO_FILE, isolation_level=None, busy_timeout_s=BUSY_TIMEOUT_S)
    try:
        for statement in wal_pragmas(BUSY_TIMEOUT_S):
            db.execute(statement)
        db.execute(_SCHEMA)
    except BaseException:
        db.close()
        raise
    return db


def _read(keys: list[bytes]) -> dict[bytes, Vectors]:
    found: dict[bytes, Vectors] = {}
    if not keys:
        return found
    try:
        db = _open()
    except (OSError, sqlite3.Error):
        return found
    try:
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            for key, blob in db.execute(
                f"SELECT key, vector FROM sentence_vectors WHERE key IN ({','.join('?' * len(part))})",
                part,
            ):
                if len(blob) == 4 * DIMENSIONS:
                    found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
    except sqlite3.Error:
        return {}
    finally:
        db.close()
    return found


def _write(rows: list[tuple[bytes, bytes]]) -> None:
    with _writing:
        try:
            db = _open()
        except (OSError, sqlite3.Error):
            return
        try:
            with db:
                db.execute("BEGIN IMMEDIATE")
                db.executemany(
                    "INSERT OR IGNORE INTO sentence_vectors(key, vector) VALUES (?, ?)", rows
                )
                db.execute(
                    "DELETE FROM sentence_vectors WHERE id <= "
                    "(SELECT max(id) FROM sentence_vectors) - ?",
                    (MAX_VECTORS,),
                )
        except sqlite3.Error:
            return
        finally:
            db.close()
