"""The embedded, offline embedding model: WordLlama's 256-dimension token embeddings.

WordLlama (PyPI ``wordllama``) ships its weights (``l2_supercat_256.safetensors``, 16 MB of
float16) and its tokenizer inside its wheel. Its own loader looks for the tokenizer in a folder
the wheel does not have and then downloads from the network, and importing the package
configures the root logger; so the two files are read here straight from the package folder
(found without importing the package) with ``safetensors`` and ``tokenizers``, and nothing can
reach the network. A text's vector is the mean of its tokens' embeddings, normalized — what
WordLlama's ``embed(norm=True)`` computes — so cosine similarity is a dot product.

Hand-written beyond the two loads: the pooling is a few numpy calls, and WordLlama's own
inference class would bring its logging side effect along.

Speed (indexing embeds every passage): the tokenizer's normalizer (prepend ``▁``, every space
→ ``▁``) is a fifth of the tokenizer's time in ``tokenizers``, whose normalizer tracks the
alignment of every byte; ``str.replace`` does the same in a fraction of it, so when the file's
normalizer is exactly that one the text is normalized here and handed to the same model without
a normalizer, which tokenizes each distinct piece once (research/embedding_pieces.py)
— the same token ids (tests/research/test_corpus_vectors.py compares the vectors with the plain
computation's).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from research.embedding_pieces import Ints, PieceTokenizer, Tokens, cuttable, joined_tokens
from research.loaders import well_formed

DIMENSIONS = 256
WEIGHTS = Path("weights") / "l2_supercat_256.safetensors"
TOKENIZER = Path("tokenizers") / "l2_supercat_tokenizer_config.json"
MAX_TOKENS = 512
"""Tokens of a text that count (a passage is about 220; a longer text is cut)."""
BATCH = 1024
"""Texts tokenized together (the more, the more pieces they share)."""
POOL_TEXTS = 8
"""Texts pooled together (:meth:`Embedder.pool`): 8 of up to 512 tokens gather 4 MiB of rows,
which stay in cache; more gather more than the cache holds and are slower."""
POOL_LAYOUT = 64 * POOL_TEXTS
"""Texts whose padded ids are laid out together (:meth:`Embedder.pool`): about 1 MiB of ids,
however many texts are pooled (all of a corpus's passages at once would be hundreds of MiB of
fresh memory, whose page faults cost more than the layout saves)."""

SPACE_MARK = "\u2581"
"""What the tokenizer's normalizer puts at the start of a text and in place of every space."""
NORMALIZER = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": SPACE_MARK},
        {"type": "Replace", "pattern": {"String": " "}, "content": SPACE_MARK},
    ],
}
"""The normalizer :func:`normalized` reproduces (the one WordLlama's tokenizer file holds)."""

Vectors = npt.NDArray[np.float32]

if TYPE_CHECKING:
    from tokenizers import Tokenizer


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
        stored = load_file(str(weights))["embedding.weight"]
        self.table = np.zeros((len(stored) + 1, stored.shape[1]), dtype=np.float32)
        """(vocabulary + 1, 256): the token embeddings, widened from the file's float16 once (a
        mean over float16 rows converts every element again and is many times slower), and a
        last row of zeros that pads shorter texts when several are pooled together."""
        self.table[:-1] = stored
        self.tokenizer = _tokenizer(Tokenizer.from_file(str(tokenizer)))
        """The tokenizer as the file defines it: the reference every text's ids are those of."""
        self.pieces: PieceTokenizer | None = None
        """Tokenizes each distinct piece once (research/embedding_pieces.py), for texts
        :func:`normalized` already: when the file's normalizer is the one that function
        reproduces, the file has no pre-tokenizer, and the vocabulary allows cutting texts into
        pieces. Its model is the file's (shared, not a copy: 12 MiB less), without normalizer."""
        if _normalizer(self.tokenizer) == NORMALIZER and self.tokenizer.pre_tokenizer is None:
            whole = Tokenizer(self.tokenizer.model)  # no truncation: pieces are joined
            cuts = cuttable(whole)
            if cuts is not None:
                self.pieces = PieceTokenizer(whole, cuts)
        self.added = [t.content for t in self.tokenizer.get_added_tokens_decoder().values()]
        """Special tokens (``<s>`` …): the tokenizer cuts a text at them before normalizing each
        piece, so texts holding one go through :attr:`tokenizer` as they are."""

    @property
    def memory_bytes(self) -> int:
        return int(self.table.nbytes)

    def tokens(self, texts: Sequence[str]) -> Tokens:
        """The texts' token ids (each text's first :data:`MAX_TOKENS`), as :attr:`tokenizer`
        gives them, end to end.

        The tokenizer releases the GIL while it works: indexing calls this on a thread of its own.
        A lone surrogate (a query from a command line read with surrogateescape) is read as
        U+FFFD: neither the tokenizer nor the pieces' UTF-32 can encode one.
        """
        parts: list[Tokens] = []
        for start in range(0, len(texts), BATCH):
            chunk = [well_formed(text) for text in texts[start : start + BATCH]]
            joined = "".join(chunk)
            held = [a for a in self.added if a in joined]
            special = [n for n, text in enumerate(chunk) if any(a in text for a in held)]
            if self.pieces is None or special:  # rare: the reference, as it is, for those texts
                reference = set(range(len(chunk))) if self.pieces is None else set(special)
                parts.append(self._mixed(chunk, reference))
            else:
                parts.append(self.pieces.tokens([normalized(t) for t in chunk], MAX_TOKENS))
        if not parts:
            return Tokens(np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp))
        return Tokens(
            np.concatenate([part.ids for part in parts]),
            np.concatenate([part.counts for part in parts]),
        )

    def _mixed(self, texts: list[str], reference: set[int]) -> Tokens:
        """The given texts through :attr:`tokenizer` as it is, the others through the pieces."""
        encoded = self.tokenizer.encode_batch_fast(
            [texts[n] for n in sorted(reference)], add_special_tokens=False
        )
        found: dict[int, Sequence[int]] = dict(
            zip(sorted(reference), (encoding.ids for encoding in encoded))
        )
        others = [n for n in range(len(texts)) if n not in reference]
        if others and self.pieces is not None:
            cut = self.pieces.tokens([normalized(texts[n]) for n in others], MAX_TOKENS)
            parts = np.split(cut.ids, np.cumsum(cut.counts)[:-1])
            found.update(zip(others, (part.tolist() for part in parts)))
        return joined_tokens([found[n] for n in range(len(texts))])

    def pool(self, texts: Sequence[str], tokens: Tokens) -> Vectors:
        """The texts' unit vectors from their :meth:`tokens`: the mean of their tokens' rows
        (zero for a blank text), :data:`POOL_LAYOUT` texts at a time (longest first)."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        counts = tokens.counts.copy()
        counts[[n for n, text in enumerate(texts) if not text.strip()]] = 0
        order = np.argsort(-counts, kind="stable")
        order = order[counts[order] > 0]
        starts = np.cumsum(tokens.counts) - tokens.counts
        for begin in range(0, len(order), POOL_LAYOUT):
            chosen = order[begin : begin + POOL_LAYOUT]
            sizes = counts[chosen]
            sums = self._sums(tokens.ids, starts[chosen], sizes)
            out[chosen] = sums / sizes[:, None].astype(np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def _sums(self, ids: Ints, starts: Ints, sizes: Ints) -> Vectors:
        """The sums of the rows of texts (``sizes`` ids from ``starts``, longest first).

        :data:`POOL_TEXTS` texts of about the same length at a time, padded with the zero row:
        two numpy calls for them all (a gather and a sum, which release the GIL) instead of a few
        per text; each text's rows are still summed one after the other in their order, so its
        vector is the one a per-text mean gives, to the bit (x + 0.0 is x). The padded ids of
        every group are laid out in one array first, by a few calls for all the texts: a call per
        group beside the two would hand the GIL to the indexing thread and wait to get it back
        each time.
        """
        firsts = np.arange(0, len(sizes), POOL_TEXTS)
        # each text's row of ids is as long as its group's longest text's
        widths = np.repeat(sizes[firsts], np.diff(firsts, append=len(sizes)))
        rows = np.cumsum(widths) - widths
        padded = np.full(int(widths.sum()), len(self.table) - 1, dtype=np.intp)
        place = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        padded[np.repeat(rows, sizes) + place] = ids[np.repeat(starts, sizes) + place]
        sums = np.empty((len(sizes), DIMENSIONS), dtype=np.float32)
        for first in firsts.tolist():
            group, width = min(POOL_TEXTS, len(sizes) - first), int(widths[first])
            group_ids = padded[rows[first] :][: group * width].reshape(group, width)
            self.table.take(group_ids, axis=0).sum(axis=1, out=sums[first : first + group])
        return sums

    def forget_pieces(self) -> None:
        """Drop the pieces :attr:`pieces` remembers (an indexing call has ended)."""
        if self.pieces is not None:
            self.pieces.forget()

    def embed(self, texts: Sequence[str]) -> Vectors:
        return self.pool(texts, self.tokens(texts))

    def embed_one(self, text: str) -> Vectors:
        vector: Vectors = self.embed([text])[0]
        return vector


def normalized(text: str) -> str:
    """``text`` as the tokenizer's normalizer (:data:`NORMALIZER`) leaves it."""
    return SPACE_MARK + text.replace(" ", SPACE_MARK) if text else text


def _normalizer(tokenizer: Tokenizer) -> object:
    """The tokenizer's normalizer as its file spells it (None without one): read alone, a fifth
    of a millisecond, where the whole tokenizer written out and parsed again took 0.08 s of the
    model's load, all of it holding the GIL the indexing thread needs meanwhile."""
    normalizer = tokenizer.normalizer
    return None if normalizer is None else json.loads(normalizer.__getstate__())


def _tokenizer(tokenizer: Tokenizer) -> Tokenizer:
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


_loaded: list[Embedder] = []
_loading = threading.Lock()


def embedder() -> Embedder:
    """The process's one embedding model, loaded on first use (about 0.3 s) by whichever thread
    asks first (indexing loads it on its embedding thread, while it parses)."""
    with _loading:
        if not _loaded:
            _loaded.append(Embedder(package_folder()))
        return _loaded[0]


def forget_pieces() -> None:
    """The process's model, if it is loaded, forgets the pieces it remembers (indexing ended)."""
    with _loading:
        models = list(_loaded)
    for model in models:
        model.forget_pieces()


def to_blobs(vectors: Vectors) -> list[bytes]:
    """Vectors as stored beside their passages: 256 float16 each (512 bytes), converted in one
    call for all of them."""
    return [row.tobytes() for row in vectors.astype(np.float16)]


def from_blobs(blobs: Sequence[bytes]) -> Vectors:
    if not blobs:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    return (
        np.frombuffer(b"".join(blobs), dtype=np.float16).reshape(-1, DIMENSIONS).astype(np.float32)
    )
