"""The version of everything that derives a document's stored data from its text.

Re-indexing skips a document whose content hash is unchanged, so what the corpus holds for it
(its passages, their vectors, its names and references, its cached head vector) was derived by
the code that indexed it. When that code changes — the splitter cuts passages differently, the
embedding model or the head encoder changes — an unchanged document would keep the old
derivation forever. So each document is stored with :data:`STAMP`, the versions of every step
that derives something from its text, and a document whose stamp differs (or that has none: a
file written before stamps) is read and derived again on the next ``corpus add`` (the default
collection: on its next use), as a changed document would be, in the same transaction — a
failure keeps what was stored.

Bump the version here, in :data:`DERIVATION`, when a step's output for the same text changes;
the model names and sizes are read from their modules, so changing one of them changes the stamp.
The versions bumped by hand (reading, passages, references) are checked by a golden test
(tests/research/test_derivation_golden.py): fixed texts through each step, hashed, the hash
recorded under the version — a step whose output changes without a bump fails it, naming the
version to bump, and a bump means recording the new hash.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Final

from research.document_heads import HEAD_CHARACTERS
from research.embeddings import MAX_TOKENS as VECTOR_TOKENS
from research.embeddings import WEIGHTS as VECTOR_WEIGHTS
from research.sentence_encoder import MAX_TOKENS as HEAD_TOKENS
from research.sentence_encoder import MODEL_FOLDER as HEAD_MODEL

DERIVATION: Final[dict[str, str]] = {
    # research.loaders.load_document: title, dates, status, header fields
    "reading": "1",
    # research.loaders.split_passages — 2: a short section runs on into the next passage
    "passages": "2",
    # research.references: the names a document goes by and the documents it names
    "references": "1",
    # research.embeddings: each passage's vector — the weights ship inside the wordllama wheel,
    # so another release of it may bring other weights under the same file name
    "vectors": f"{VECTOR_WEIGHTS.stem}/{version('wordllama')}/{VECTOR_TOKENS}/1",
    # research.document_heads: the head's sentence vector (a cache, dropped with the document)
    "heads": f"{HEAD_MODEL.name}/{HEAD_TOKENS}/{HEAD_CHARACTERS}/1",
}
"""One version per step that derives stored data from a document's text."""

STAMP: Final = ";".join(f"{step}={version}" for step, version in sorted(DERIVATION.items()))
"""What a document indexed by this code is stored with (``document_derivation``)."""
