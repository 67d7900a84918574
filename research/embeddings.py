"""The embedded, offline embedding model: WordLlama's 256-dimension token embeddings.

WordLlama (PyPI ``wordllama``) ships its weights (``l2_supercat_256.safetensors``, 16 MB of
float16) and its tokenizer inside its wheel. Its own loader looks for the tokenizer in a folder
the wheel does not have and then downloads from the network, and importing the package
configures the root logger; so the two files are read here straight from the package folder
(found without importing the package) with ``safetensors`` and ``tokenizers``, and nothing can
reach the network. A text's vector is the mean of its tokens' embeddings, normalized — what
WordLlama's ``embed(norm=True)`` computes — so cosine similarity is a dot product.

Hand-written beyond the two loads: the pooling is one line of numpy, and WordLlama's own
inference class would bring its logging side effect along.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import numpy.typing as npt

DIMENSIONS = 256
WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
MAX_TOKENS = 512
"""Tokens of a text that count (a passage is about 220; a longer text is cut)."""
BATCH = 256

Vectors = npt.NDArray[np.float32]


class EmbeddingModelMissing(RuntimeError):
    """The wordllama package (its weights and tokenizer) is not installed; one line."""


def package_folder() -> Path:
    """The installed wordllama package's folder, found without importing it."""
    spec = importlib.util.find_spec("wordllama")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise EmbeddingModelMissing(
            "the wordllama package is not installed: run make (pip install -e .) to install it"
        )
    return Path(locations[0])


class Embedder:
    """Texts → unit vectors of :data:`DIMENSIONS` float32."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        weights, tokenizer = folder / WEIGHTS, folder / TOKENIZER
        missing = [str(p) for p in (weights, tokenizer) if not p.is_file()]
        if missing:
            raise EmbeddingModelMissing(
                f"{missing[0]}: the embedding model's file is missing; reinstall wordllama"
            )
        self.table = load_file(str(weights))["embedding.weight"].astype(np.float32)
        """(vocabulary, 256): the token embeddings, widened from the file's float16 once (a
        mean over float16 rows converts every element again and is many times slower)."""
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    @property
    def memory_bytes(self) -> int:
        return int(self.table.nbytes)

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for start in range(0, len(texts), BATCH):
            chunk = list(texts[start : start + BATCH])
            encoded = self.tokenizer.encode_batch_fast(chunk, add_special_tokens=False)
            for offset, (encoding, text) in enumerate(zip(encoded, chunk)):
                if encoding.ids and text.strip():
                    # per text, so the gathered rows stay in cache (one gather for a whole
                    # batch streams hundreds of megabytes and is several times slower)
                    out[start + offset] = self.table[encoding.ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_one(self, text: str) -> Vectors:
        vector: Vectors = self.embed([text])[0]
        return vector


@cache
def embedder() -> Embedder:
    """The process's one embedding model, loaded on first use (about 0.3 s)."""
    return Embedder(package_folder())


def to_blob(vector: Vectors) -> bytes:
    """A vector as stored beside its passage: 256 float16 (512 bytes)."""
    return vector.astype(np.float16).tobytes()


def from_blobs(blobs: Sequence[bytes]) -> Vectors:
    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    return (
        np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(-1, DIMENSIONS).astype(np.float32)
    )
