"""Tokenizing a batch of normalized texts with each distinct piece tokenized once.

The tokenizer's BPE runs over a whole passage (the file has no pre-tokenizer) at about 150 ns a
character, most of the cost of indexing. But a BPE merge makes a token of the vocabulary, so it
never joins two characters that no token holds side by side: a text cut between such characters
tokenizes piece by piece into exactly the ids of the whole. No token of WordLlama's vocabulary
holds a newline, none has a ``▁`` after another character, and none has a letter before ``,`` ``.``
``)`` or a backtick, or a letter beside ``_`` …: :func:`cuttable` finds every such pair of ASCII
characters in the vocabulary when the model loads. Cut so, the PEP passages hold 3.1 million
pieces but only 70,000 distinct ones ("▁the", "▁PEP", "``" …; 0.7 M characters against the
passages' 13.5 M): each distinct one is tokenized once, and a text's ids are gathered from the
known pieces' ids.

Hand-written with numpy: the tokenizer's own pre-tokenizer (``Split``) and word cache do this more
slowly than the BPE they save (3 CPU-s for the PEP passages, measured), and finding the pieces
with a regular expression and numbering them in a Python dictionary costs about a second (a
Python step per piece, holding the GIL). Here a batch's pieces are found and hashed in a few
numpy passes over its characters (a polynomial hash from prefix sums), looked up in an
open-addressing table of the known pieces' hashes, and checked character by character against the
known piece: a hash shared by two different pieces can never join them (the batch then goes
through the tokenizer whole). Python sees only the pieces never met before.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MARK = 0x2581
"""``▁``: the normalizer's space."""
NEWLINE = 0x0A
OTHER = 128
"""Every character past ASCII, for the pairs a text may be cut between."""
BASE = 0x9E3779B97F4A7C15
"""The hash's multiplier, odd so that it has an inverse modulo 2**64 (numpy's uint64 arithmetic
wraps: modulo 2**64)."""
SLOT_MIX = 0xBF58476D1CE4E5B9
"""An odd multiplier that spreads every bit of a hash into the top bits the table's slot is."""
POWER_BLOCK = 1024
PIECES_PER_TEXT = 1024
"""New pieces joined (by newlines) into one text for the tokenizer (its texts are spread over the
cores)."""
KNOWN_PIECES = 100_000
"""Pieces whose ids are kept from one batch to the next (a corpus repeats its words from batch to
batch; the PEPs have 70,000 distinct pieces), about 20 MiB at most; past it they are forgotten."""

Ints = npt.NDArray[np.intp]
Hashes = npt.NDArray[np.uint64]
Codes = npt.NDArray[np.uint32]
Mask = npt.NDArray[np.bool_]


class Tokens(NamedTuple):
    """Texts' token ids end to end (``ids``) and how many belong to each text (``counts``)."""

    ids: Ints
    counts: Ints


def joined_tokens(texts_ids: Sequence[Sequence[int]]) -> Tokens:
    """Tokens from each text's ids."""
    return Tokens(
        np.fromiter(chain.from_iterable(texts_ids), dtype=np.intp),
        np.fromiter(map(len, texts_ids), dtype=np.intp, count=len(texts_ids)),
    )


class Cuts(NamedTuple):
    """Where texts may be cut into pieces (see the module)."""

    newline: int
    """The newline's id."""
    between: Mask
    """``between[a, b]``: a text may be cut between ASCII characters ``a`` and ``b`` (each a token
    of its own, and no token holds ``a`` followed by ``b``); row and column 128 (every other
    character) are all False."""


def cuttable(tokenizer: Tokenizer) -> Cuts | None:
    """Where texts may be cut into pieces, or None when the vocabulary allows no cutting."""
    vocabulary = tokenizer.get_vocab()
    mark = chr(MARK)
    spaced = any("\n" in token or mark in token.lstrip(mark) for token in vocabulary)
    newline = tokenizer.encode("\n", add_special_tokens=False).ids
    if spaced or len(newline) != 1:
        return None
    # every pair of neighbouring characters inside a token (the tokens joined by newlines,
    # which no token holds), characters past ASCII as one
    codes = np.minimum(np.frombuffer("\n".join(vocabulary).encode("utf-32-le"), np.uint32), OTHER)
    inside = (codes[:-1] != NEWLINE) & (codes[1:] != NEWLINE)
    joined = np.zeros((OTHER + 1, OTHER + 1), dtype=bool)
    joined[codes[:-1][inside], codes[1:][inside]] = True
    alone = np.zeros(OTHER + 1, dtype=bool)
    alone[[ord(token) for token in vocabulary if len(token) == 1 and ord(token) < OTHER]] = True
    return Cuts(newline[0], alone[:, None] & alone[None, :] & ~joined)


def _powers(base: int, count: int) -> Hashes:
    """base**0 … base**(count - 1), modulo 2**64: the powers below :data:`POWER_BLOCK` times
    those of base**POWER_BLOCK (a cumulative product is a chain of dependent multiplications;
    this is two short chains and one product over all)."""
    low = np.full(POWER_BLOCK, base, dtype=np.uint64)
    low[:1] = 1
    low = np.cumprod(low, dtype=np.uint64)
    high = np.full(-(-count // POWER_BLOCK), pow(base, POWER_BLOCK, 2**64), dtype=np.uint64)
    high[:1] = 1
    powers: Hashes = np.multiply.outer(np.cumprod(high, dtype=np.uint64), low).reshape(-1)
    return powers[:count]


def _pieces(codes: Codes, lengths: Ints, between: Mask) -> tuple[Ints, Ints]:
    """(start, size) of every piece: a cut before each ``▁`` after another character, around
    each newline, between two ASCII characters ``between`` allows, and between texts."""
    mark, newline = codes == MARK, codes == NEWLINE
    kind = np.minimum(codes, OTHER)
    cut = np.empty(len(codes), dtype=bool)
    cut[0] = True
    allowed = between.ravel().take(kind[:-1] * np.uint32(OTHER + 1) + kind[1:])  # 4x [a, b]
    cut[1:] = newline[1:] | newline[:-1] | (mark[1:] & ~mark[:-1]) | allowed
    cut[(np.cumsum(lengths) - lengths)[lengths > 0]] = True
    starts = np.flatnonzero(cut)
    return starts, np.diff(starts, append=len(codes))


def _hashes(codes: Codes, starts: Ints, sizes: Ints, powers: tuple[Hashes, Hashes]) -> Hashes:
    """Each piece's hash: the sum of its characters times BASE to their place in the piece, mixed
    with its size — from the prefix sums of the characters times BASE to their place in the
    batch (``powers``: BASE's and its inverse's, as many as there are characters at least),
    brought back by the inverse of BASE to the piece's start."""
    forward, backward = powers
    prefix = np.zeros(len(codes) + 1, dtype=np.uint64)
    np.cumsum(codes.astype(np.uint64) * forward[: len(codes)], out=prefix[1:])
    hashes: Hashes = (prefix[starts + sizes] - prefix[starts]) * backward[starts]
    return hashes ^ sizes.astype(np.uint64)


def _ends(counts: Ints) -> Ints:
    ends: Ints = np.cumsum(counts, dtype=np.intp)
    return ends


def _gather(starts: Ints, sizes: Ints) -> Ints:
    """Where the runs (``starts``, ``sizes``) lie, end to end."""
    ends = _ends(sizes)
    at: Ints = np.repeat(starts - (ends - sizes), sizes) + np.arange(ends[-1:].sum())
    return at


class _HashTable:
    """Piece hashes → piece numbers: open addressing with linear probing, looked up and filled
    for a whole batch at once in numpy (a binary search of a sorted array costs ten times more:
    eighteen dependent reads a piece). Hand-written: numpy has no hash table, and a Python
    dictionary takes a Python step per piece."""

    def __init__(self) -> None:
        self._empty(16)

    def _empty(self, bits: int) -> None:
        self.bits = bits
        self.keys = np.zeros(1 << bits, dtype=np.uint64)
        self.values = np.full(1 << bits, -1, dtype=np.intp)
        self.count = 0

    def _slots(self, hashes: Hashes) -> Ints:
        """Each hash's first slot: the top bits of the hash times an odd constant (a
        one-character piece's hash is a small number: its own top bits are all zero)."""
        mixed = hashes * np.uint64(SLOT_MIX)
        slots: Ints = (mixed >> np.uint64(64 - self.bits)).astype(np.intp)
        return slots

    def find(self, hashes: Hashes) -> Ints:
        """Each hash's number, -1 for a hash not in the table."""
        numbers = np.full(len(hashes), -1, dtype=np.intp)
        slots = self._slots(hashes)
        pending = np.arange(len(hashes))
        while len(pending):
            values = self.values[slots[pending]]
            hit = (values >= 0) & (self.keys[slots[pending]] == hashes[pending])
            numbers[pending[hit]] = values[hit]
            pending = pending[(values >= 0) & ~hit]  # another hash there: the next slot
            slots[pending] = (slots[pending] + 1) & ((1 << self.bits) - 1)
        return numbers

    def add(self, hashes: Hashes, numbers: Ints) -> None:
        """Enter hashes not in the table (each once) with their numbers; the table is kept at
        most half full (past that, a table twice the size is filled again)."""
        needed = self.count + len(hashes)
        if 2 * needed > len(self.keys):
            used = self.values >= 0
            known, their_numbers = self.keys[used], self.values[used]
            self._empty(max(self.bits + 1, (2 * needed).bit_length()))
            self._place(known, their_numbers)
        self._place(hashes, numbers)

    def _place(self, hashes: Hashes, numbers: Ints) -> None:
        slots = self._slots(hashes)
        pending = np.arange(len(hashes))
        while len(pending):
            free = pending[self.values[slots[pending]] < 0]
            _, first = np.unique(slots[free], return_index=True)  # one hash a free slot
            chosen = free[first]
            self.keys[slots[chosen]] = hashes[chosen]
            self.values[slots[chosen]] = numbers[chosen]
            pending = np.setdiff1d(pending, chosen, assume_unique=True)
            slots[pending] = (slots[pending] + 1) & ((1 << self.bits) - 1)
        self.count += len(hashes)


class PieceTokenizer:
    """Texts already normalized → their token ids, each distinct piece tokenized once."""

    def __init__(self, tokenizer: Tokenizer, cuts: Cuts) -> None:
        self.tokenizer = tokenizer
        """The model with no normalizer and no truncation (the pieces are joined into long texts)."""
        self.newline = cuts.newline
        self.between = cuts.between
        self._using = threading.Lock()
        """One call at a time: the known pieces are read and added to by each (indexing's
        thread, a search's)."""
        self._reset()

    def _reset(self) -> None:
        """Only the newline is known (it is what joins new pieces, never one of them)."""
        newline = np.array([NEWLINE], dtype=np.uint32)
        one = np.ones(1, dtype=np.intp)
        self.table = _HashTable()
        """The known pieces' hashes and numbers: piece n's ids are ``ids[id_start[n]:][:size[n]]``,
        its characters ``characters[char_start[n]:][:length[n]]``."""
        self.powers = (_powers(BASE, 1), _powers(pow(BASE, -1, 2**64), 1))
        """BASE's powers and its inverse's, kept for the next batch (as long as the longest)."""
        self.table.add(
            _hashes(newline, np.zeros(1, dtype=np.intp), one, self.powers), np.zeros(1, np.intp)
        )
        self.ids: Ints = np.array([self.newline], dtype=np.intp)
        self.id_start: Ints = np.zeros(1, dtype=np.intp)
        self.size: Ints = one
        self.characters: Codes = newline
        self.char_start: Ints = np.zeros(1, dtype=np.intp)
        self.length: Ints = one

    @property
    def known(self) -> int:
        """How many pieces are known."""
        return len(self.size)

    def forget(self) -> None:
        """Drop the pieces met so far (indexing calls this when it ends: up to 20 MiB)."""
        with self._using:
            self._reset()

    def tokens(self, texts: list[str], limit: int) -> Tokens:
        """The texts' ids, each text's first ``limit`` only."""
        with self._using:
            lengths = np.fromiter(map(len, texts), dtype=np.intp, count=len(texts))
            if not lengths.sum():
                return Tokens(np.zeros(0, dtype=np.intp), np.zeros(len(texts), dtype=np.intp))
            if self.known > KNOWN_PIECES:
                self._reset()
            found = self._pieces(texts, lengths)
            if found is None:  # two different pieces hashed alike: the whole texts
                encoded = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
                return joined_tokens([encoding.ids[:limit] for encoding in encoded])
            starts, numbers = found
            sizes = self.size[numbers]
            ids = self.ids[_gather(self.id_start[numbers], sizes)]
            text_of_piece = np.searchsorted(np.cumsum(lengths), starts, side="right")
            counts = np.bincount(text_of_piece, weights=sizes, minlength=len(texts))
            counts = counts.astype(np.intp)
            if counts.max() > limit:
                position = np.arange(len(ids)) - np.repeat(_ends(counts) - counts, counts)
                ids = ids[position < limit]
                counts = np.minimum(counts, limit)
            return Tokens(ids, counts)

    def _pieces(self, texts: list[str], lengths: Ints) -> tuple[Ints, Ints] | None:
        """(start, known piece number) of each piece of the texts, end to end; pieces not met
        before are tokenized and known from now on. None when two different pieces hashed
        alike."""
        joined = "".join(texts)
        codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
        starts, sizes = _pieces(codes, lengths, self.between)
        if len(self.powers[0]) < len(codes):
            self.powers = (_powers(BASE, len(codes)), _powers(pow(BASE, -1, 2**64), len(codes)))
        hashes = _hashes(codes, starts, sizes, self.powers)
        numbers = self.table.find(hashes)
        unknown = np.flatnonzero(numbers < 0)
        if len(unknown):
            distinct, first, inverse = np.unique(
                hashes[unknown], return_index=True, return_inverse=True
            )
            new = unknown[first]
            numbers[unknown] = self.known + inverse.reshape(-1)
            self._learn(joined, codes, starts[new], sizes[new], distinct)
        if not np.array_equal(self.length[numbers], sizes):
            return None
        where = _gather(self.char_start[numbers], sizes)
        if not np.array_equal(self.characters[where], codes):
            return None
        return starts, numbers

    def _learn(self, joined: str, codes: Codes, starts: Ints, sizes: Ints, hashes: Hashes) -> None:
        """Tokenize the pieces at (``starts``, ``sizes``) of ``joined``, never met before and
        each with its own hash, and know them from now on.

        They are joined by newlines, a thousand a text: a newline is one id that no merge touches
        and that no other character gives, so the ids split back at it exactly.
        """
        new = [joined[s : s + n] for s, n in zip(starts.tolist(), sizes.tolist())]
        chunks = [new[n : n + PIECES_PER_TEXT] for n in range(0, len(new), PIECES_PER_TEXT)]
        encoded = self.tokenizer.encode_batch_fast(
            ["\n".join(chunk) for chunk in chunks], add_special_tokens=False
        )
        lists = [encoding.ids for encoding in encoded]
        ids = np.fromiter(chain.from_iterable(lists), dtype=np.intp)
        cut = ids == self.newline
        # a chunk's last piece is followed by no newline: each chunk before adds one piece
        piece_of = np.cumsum(cut) + np.repeat(np.arange(len(chunks)), list(map(len, lists)))
        counts = np.bincount(piece_of[~cut], minlength=len(new)).astype(np.intp)
        self.table.add(hashes, np.arange(self.known, self.known + len(new)))
        self.id_start = np.concatenate([self.id_start, len(self.ids) + _ends(counts) - counts])
        self.ids = np.concatenate([self.ids, ids[~cut]])
        self.size = np.concatenate([self.size, counts])
        self.char_start = np.concatenate(
            [self.char_start, len(self.characters) + _ends(sizes) - sizes]
        )
        self.characters = np.concatenate([self.characters, codes[_gather(starts, sizes)]])
        self.length = np.concatenate([self.length, sizes])
