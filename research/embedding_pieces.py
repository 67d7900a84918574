"""Tokenizing a batch of normalized texts with each distinct piece tokenized once.

The tokenizer's BPE runs over a whole passage (the file has no pre-tokenizer) at about 150 ns a
character, most of the cost of indexing. But no token of WordLlama's vocabulary holds a newline,
and none has a ``▁`` after another character: so a text cut before every ``▁`` that follows
another character, and around every newline, tokenizes piece by piece into exactly the ids of
the whole (a BPE merge never joins two pieces). A batch of passages repeats its pieces ("▁the",
"▁PEP") many times: each distinct one is tokenized once, and the texts' ids are put together
from them. :func:`cuttable` checks the vocabulary's two properties when the model loads.

Hand-written with numpy: the tokenizer's own pre-tokenizer (``Split``) and word cache do this
more slowly than the BPE they save (measured), and looking every piece up in a Python dictionary
(two million for the PEPs) costs about what it saves, holding the GIL. Here the pieces are
found, hashed and told apart in a few numpy calls over the batch's characters (which release the
GIL), the hashes checked character by character, so a collision can never join two different
pieces (the batch then goes the plain way); Python sees only the distinct pieces of a batch,
whose ids it remembers from batch to batch.
"""

from __future__ import annotations

import threading
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MARK = 0x2581
"""``▁``: the normalizer's space."""
NEWLINE = 0x0A
BASE = np.uint64(0x9E3779B97F4A7C15)
"""The hash's multiplier (numpy's uint64 arithmetic wraps: modulo 2**64)."""
PIECES_PER_TEXT = 1024
"""Distinct pieces joined (by newlines) into one text for the tokenizer (its texts are spread
over the cores)."""
KNOWN_PIECES = 100_000
"""Pieces whose ids are kept from one call to the next (a corpus repeats its words from batch to
batch; the PEPs have 176,000 distinct pieces), about 30 MiB at most; past it they are forgotten."""

Ints = npt.NDArray[np.int64]


def cuttable(tokenizer: Tokenizer) -> int | None:
    """The newline's id when texts may be cut into pieces (see the module), else None."""
    vocabulary = tokenizer.get_vocab()
    spaced = any("\n" in token or chr(MARK) in token.lstrip(chr(MARK)) for token in vocabulary)
    newline = tokenizer.encode("\n", add_special_tokens=False).ids
    return None if spaced or len(newline) != 1 else newline[0]


def _powers(base: np.uint64, count: int) -> npt.NDArray[np.uint64]:
    powers = np.full(count, base, dtype=np.uint64)
    powers[0] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(powers, dtype=np.uint64)


class PieceTokenizer:
    """Texts already normalized → their token ids, each distinct piece of a call tokenized once."""

    def __init__(self, tokenizer: Tokenizer, newline: int) -> None:
        self.tokenizer = tokenizer
        """The model with no normalizer and no truncation (the pieces are joined into long texts)."""
        self.newline = newline
        self.known: dict[str, tuple[int, ...]] = {"\n": (newline,)}
        self._using = threading.Lock()
        """One call at a time: :attr:`known` is read and filled by each (indexing's thread, a
        search's)."""

    def forget(self) -> None:
        """Drop the pieces met so far (indexing calls this when it ends: up to 30 MiB)."""
        with self._using:
            self.known = {"\n": (self.newline,)}

    def token_ids(self, texts: list[str], limit: int) -> list[list[int]] | None:
        """Each text's first ``limit`` ids, or None when two different pieces hashed alike."""
        with self._using:
            return self._token_ids(texts, limit)

    def _token_ids(self, texts: list[str], limit: int) -> list[list[int]] | None:
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
        joined = "".join(texts)
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        if not len(codes):
            return [[] for _ in texts]
        starts, sizes = self._pieces(codes, lengths)
        found = self._distinct(codes, starts, sizes)
        if found is None:
            return None
        first, inverse = found
        tokens, offsets = self._tokenized(joined, starts[first], sizes[first])
        counts = np.diff(offsets)[inverse]
        before = np.cumsum(counts) - counts
        flat = tokens[np.repeat(offsets[:-1][inverse] - before, counts) + np.arange(counts.sum())]
        text_of_piece = np.searchsorted(np.cumsum(lengths), starts, side="right")
        per_text = np.bincount(text_of_piece, weights=counts, minlength=len(texts))
        ends = np.cumsum(per_text.astype(np.int64))
        return [
            flat[end - size : end - size + min(size, limit)].tolist()
            for end, size in zip(ends.tolist(), per_text.astype(np.int64).tolist())
        ]

    @staticmethod
    def _pieces(codes: npt.NDArray[np.uint32], lengths: Ints) -> tuple[Ints, Ints]:
        """(start, size) of every piece: a cut before each ``▁`` after another character, around
        each newline, and between texts."""
        mark, newline = codes == MARK, codes == NEWLINE
        cut = np.empty(len(codes), dtype=bool)
        cut[0] = True
        cut[1:] = newline[1:] | newline[:-1] | (mark[1:] & ~mark[:-1])
        text_starts = (np.cumsum(lengths) - lengths)[lengths > 0]
        cut[text_starts] = True
        starts = np.flatnonzero(cut).astype(np.int64)
        return starts, np.diff(np.append(starts, len(codes)))

    def _distinct(
        self, codes: npt.NDArray[np.uint32], starts: Ints, sizes: Ints
    ) -> tuple[Ints, Ints] | None:
        """(the first piece of each distinct one, each piece's distinct number), or None when a
        hash was shared by different pieces."""
        piece_of = np.repeat(np.arange(len(starts)), sizes)
        offset = np.arange(len(codes)) - starts[piece_of]
        with np.errstate(over="ignore"):  # a polynomial hash modulo 2**64
            weighted = codes.astype(np.uint64) * _powers(BASE, int(sizes.max()))[offset]
            hashes = np.add.reduceat(weighted, starts) ^ sizes.astype(np.uint64)
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        first = first.astype(np.int64)
        inverse = inverse.reshape(-1).astype(np.int64)
        if not np.array_equal(sizes[first][inverse], sizes):
            return None
        if not np.array_equal(codes[starts[first][inverse][piece_of] + offset], codes):
            return None
        return first, inverse

    def _tokenized(self, joined: str, starts: Ints, sizes: Ints) -> tuple[Ints, Ints]:
        """The ids of the distinct pieces end to end, and where each one's begin (then the end).

        Pieces not met before (in this model's last :data:`KNOWN_PIECES`) are joined by
        newlines, a thousand a text: a newline is one id that no merge touches and that no
        other character gives, so the ids split back at it exactly.
        """
        pieces = [joined[s : s + n] for s, n in zip(starts.tolist(), sizes.tolist())]
        if len(self.known) > KNOWN_PIECES:
            self.known = {"\n": (self.newline,)}
        new = [piece for piece in pieces if piece not in self.known]
        chunks = [new[n : n + PIECES_PER_TEXT] for n in range(0, len(new), PIECES_PER_TEXT)]
        encoded = self.tokenizer.encode_batch_fast(
            ["\n".join(chunk) for chunk in chunks], add_special_tokens=False
        )
        for chunk, encoding in zip(chunks, encoded):
            ids = encoding.ids
            joins = np.flatnonzero(np.array(ids) == self.newline).tolist()
            bounds = [-1, *joins, len(ids)]
            self.known.update(
                (piece, tuple(ids[bounds[n] + 1 : bounds[n + 1]])) for n, piece in enumerate(chunk)
            )
        found = [self.known[piece] for piece in pieces]
        counts = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
        tokens = np.fromiter(chain.from_iterable(found), dtype=np.int64, count=int(counts.sum()))
        return tokens, np.concatenate(([0], np.cumsum(counts)))
