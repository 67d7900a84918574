"""The sentence encoder's vectors remembered on this machine (research/sentence_memo.py): a text
encoded once is read back in another process, exactly; a vector of another encoder is never
used; the memo keeps its newest vectors only; a memo that cannot be used costs time, not
answers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from research import sentence_memo
from research.sentence_encoder import sentence_encoder
from tests.research.test_sentence_encoder import counting_encodes

TEXTS = [
    "How do I cancel an asyncio task and wait for it to finish?",
    "Sourdough bread rises slowly.",
    "A dictionary maps keys to values.",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache dir of the test's own; the memo file's path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "research-workbench" / sentence_memo.MEMO_FILE


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every batch the encoder itself is asked for, from now on."""
    sentence_encoder()
    return counting_encodes(monkeypatch)


def test_a_text_is_encoded_once_and_read_back_exactly(
    cache: Path, encoded: list[list[str]]
) -> None:
    first = sentence_memo.encode([TEXTS[0], TEXTS[1], TEXTS[0]])
    assert encoded == [[TEXTS[0], TEXTS[1]]]  # a repeated text is encoded once
    assert np.array_equal(first[0], first[2])
    encoded.clear()
    again = sentence_memo.encode(TEXTS)  # the memo is a file: another process reads it too
    assert encoded == [[TEXTS[2]]]
    assert np.array_equal(again[:2], first[:2])
    direct = sentence_encoder().encode(TEXTS)
    assert np.allclose(again, direct, atol=1e-5)
    assert cache.is_file()


def test_a_vector_of_another_encoder_is_never_used(
    cache: Path, encoded: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    sentence_memo.encode(TEXTS)
    encoded.clear()
    monkeypatch.setattr(sentence_memo, "ENCODER_ID", "another model")
    sentence_memo.encode(TEXTS)
    assert encoded == [TEXTS]


def test_the_memo_keeps_its_newest_vectors(
    cache: Path, encoded: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sentence_memo, "MAX_VECTORS", 2)
    for text in TEXTS:
        sentence_memo.encode([text])
    with sqlite3.connect(cache) as db:
        assert db.execute("SELECT COUNT(*) FROM memo").fetchone()[0] == 2
    encoded.clear()
    sentence_memo.encode(TEXTS)
    assert encoded == [[TEXTS[0]]]  # the oldest went first


@pytest.mark.parametrize("damage", ["not a database", "a folder in its place", "no folder"])
def test_a_memo_that_cannot_be_used_costs_time_not_answers(
    cache: Path, encoded: list[list[str]], damage: str
) -> None:
    cache.parent.parent.mkdir(parents=True)
    if damage == "no folder":
        cache.parent.write_text("a file where the cache folder would be")
    else:
        cache.parent.mkdir()
    if damage == "not a database":
        cache.write_bytes(b"garbage " * 512)
    elif damage == "a folder in its place":
        cache.mkdir()
    vectors = sentence_memo.encode(TEXTS)
    again = sentence_memo.encode(TEXTS)
    assert np.allclose(vectors, sentence_encoder().encode(TEXTS), atol=1e-5)
    assert np.array_equal(vectors, again)
    assert len(encoded) == 3  # nothing remembered: each call encoded (the third is the check)
    if damage == "not a database":
        assert cache.read_bytes() == b"garbage " * 512  # left as it was
