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

The file (a memo file: plumbing/memo_files.py) holds at most :data:`MAX_VECTORS` vectors (about
150 MB); one that cannot be used only costs time: the vectors are computed and used all the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from plumbing.memo_files import read_memo, write_memo
from research.sentence_encoder import DIMENSIONS, ENCODER_ID, Vectors, sentence_encoder

MEMO_FILE = "sentence-vectors.sqlite"
MAX_VECTORS = 100_000
"""Vectors the memo keeps (1.5 KB each): every head and passage of several large corpora."""


def encode(texts: Sequence[str]) -> Vectors:
    """Each text's unit vector, in the given order: remembered ones read, the others encoded
    (in one batch) and remembered."""
    keys = [_key(text) for text in texts]
    found = {
        key: np.frombuffer(blob, dtype=np.float32)
        for key, blob in read_memo(MEMO_FILE, list(dict.fromkeys(keys))).items()
        if len(blob) == 4 * DIMENSIONS
    }
    missing = list(dict.fromkeys(k for k in keys if k not in found))
    if missing:
        text_of = dict(zip(keys, texts))
        computed = sentence_encoder().encode([text_of[k] for k in missing])
        found.update(zip(missing, computed))
        write_memo(
            MEMO_FILE, [(k, computed[n].tobytes()) for n, k in enumerate(missing)], MAX_VECTORS
        )
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    for n, key in enumerate(keys):
        out[n] = found[key]
    return out


def _key(text: str) -> bytes:
    return hashlib.sha256(f"{ENCODER_ID}\0{text}".encode("utf-8", "surrogatepass")).digest()
