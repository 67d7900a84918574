"""Passage vectors as indexing stores them: the same as the plain computation, to the bit.

The reference below is the straightforward one (the tokenizer file as shipped, one text at a
time, the mean of the tokens' rows, normalized as one matrix as before). The embedder normalizes
texts itself, tokenizes each distinct piece of a batch once (research/embedding_pieces.py) and
pools several texts at once, and the corpus embeds on a worker thread
(research/corpus_vectors.py): none of that may change a vector.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest

from research import corpus_vectors, embedding_pieces
from research.corpus import Corpus, CorpusWriteError
from research.embedding_pieces import Tokens
from research.embeddings import (
    MAX_TOKENS,
    TOKENIZER,
    WEIGHTS,
    Embedder,
    Vectors,
    embedder,
    normalized,
    package_folder,
    to_blobs,
)
from research.loaders import load_document, split_passages
from tests.pep_corpus import PEPS, skip_without_peps

ODD_TEXTS = [
    "",
    "   ",
    "structural pattern matching",
    "  leading and trailing spaces  ",
    "double  spaces,\ttabs\tand\nnew\n\nlines",
    "the literal <s> and </s> and <unk> tokens, and a <s>tag</s>",
    "a\u2581mark already in the text \u2581\u2581 twice",
    "naïve café — ✓ 日本語 🐍 emoji",
    "word " * 900,
    "x" * 3000,
    "``__init__(self, *args)``: a.b.c; x:y, {'k': [1, 2]} -- PEP-8's `rules`! (see <url>)",
]
"""Texts where a shortcut could go wrong: blank, special-token strings, the normalizer's own mark,
characters outside the vocabulary (byte fallback), and texts past the token limit."""


def reference_vectors(texts: list[str]) -> Vectors:
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    folder = package_folder()
    table = load_file(str(folder / WEIGHTS))["embedding.weight"].astype(np.float32)
    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
    tokenizer.enable_truncation(MAX_TOKENS)
    out = np.zeros((len(texts), table.shape[1]), dtype=np.float32)
    for number, text in enumerate(texts):
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if ids and text.strip():
            out[number] = table[ids].mean(axis=0)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=out, where=norms > 0)


def test_the_embedder_gives_the_plain_computations_vectors() -> None:
    model = Embedder(package_folder())
    assert model.pieces is not None, "its normalizer is reproduced, its vocabulary cuttable"
    expected = reference_vectors(ODD_TEXTS)
    vectors = model.embed(ODD_TEXTS)  # together (one holds "<s>": all go the reference's way)
    alone = np.vstack([model.embed([text]) for text in ODD_TEXTS])  # the others the fast way
    assert np.allclose(vectors, expected, rtol=1e-6, atol=1e-6)
    assert np.allclose(alone, expected, rtol=1e-6, atol=1e-6)
    assert not vectors[0].any() and not vectors[1].any()
    assert model.tokens(["word " * 900, "word"]).counts.tolist() == [MAX_TOKENS, 1]


def test_texts_are_cut_only_where_no_token_spans_the_cut() -> None:
    """Every pair of ASCII characters the pieces are cut between, tried between two words: the
    ids of the whole are those of its two sides."""
    model = Embedder(package_folder())
    assert model.pieces is not None
    tokenizer = model.pieces.tokenizer
    pairs = np.argwhere(model.pieces.between)
    assert len(pairs) > 1000 and not model.pieces.between[:, 128].any()
    for a, b in pairs.tolist():
        left, right = normalized(f"key{chr(a)}"), f"{chr(b)}word"
        whole = tokenizer.encode(left + right, add_special_tokens=False).ids
        parts = [tokenizer.encode(t, add_special_tokens=False).ids for t in (left, right)]
        assert whole == parts[0] + parts[1], (chr(a), chr(b))


def test_pieces_that_hash_alike_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding_pieces, "BASE", 1)  # a hash every anagram shares
    model = Embedder(package_folder())
    texts = ["stop the pots on the tops", "listen: silent enlist"]
    assert model.pieces is not None
    inputs = [normalized(t) for t in texts]
    assert model.pieces._pieces(inputs, np.array([len(t) for t in inputs])) is None
    assert np.allclose(model.embed(texts), reference_vectors(texts), rtol=1e-6, atol=1e-6)
    later = ["the tops stop", "enlist the pots"]  # pieces known now, matched by hash: checked too
    assert np.allclose(model.embed(later), reference_vectors(later), rtol=1e-6, atol=1e-6)


def _stored(db: sqlite3.Connection, every: int) -> tuple[list[str], list[bytes]]:
    rows = db.execute(
        "SELECT f.title, f.section, f.text, v.vector FROM passage_fts f "
        "JOIN passage_vectors v ON v.rowid = f.rowid ORDER BY f.rowid"
    ).fetchall()
    sample = rows[::every]
    return [f"{t}\n{s}\n{x}" for t, s, x, _ in sample], [blob for *_, blob in sample]


def test_the_pep_corpus_stores_the_plain_computations_vectors(pep_corpus_path: Path) -> None:
    with Corpus(pep_corpus_path) as corpus:
        texts, blobs = _stored(corpus._db, every=37)
        missing = corpus._db.execute(
            "SELECT COUNT(*) FROM passages p LEFT JOIN passage_vectors v ON v.rowid = p.rowid "
            "WHERE v.rowid IS NULL"
        ).fetchone()[0]
    assert len(texts) > 300 and missing == 0
    expected = reference_vectors(texts)
    assert np.allclose(embedder().embed(texts), expected, rtol=1e-6, atol=1e-6)
    assert blobs == to_blobs(expected), "stored float16 bytes are those of the reference vectors"


def _write_folder(folder: Path, documents: int, version: str) -> None:
    folder.mkdir(exist_ok=True)
    for n in range(documents):
        paragraphs = [
            f"Paragraph {p} of note {n} ({version}) says sprocket {n * 31 + p} meshes with gear "
            f"{p}, and the assembly holds under load {version}."
            for p in range(60)
        ]
        text = f"# Note {n}\n\n" + "\n\n".join(paragraphs) + "\n"
        (folder / f"note{n:02}.md").write_text(text, encoding="utf-8")


def _snapshot(corpus: Corpus) -> list[list[tuple[object, ...]]]:
    queries = (
        "SELECT source_id, content_hash, passages FROM documents ORDER BY source_id",
        "SELECT rowid, passage_id FROM passages ORDER BY rowid",
        "SELECT rowid, title, section, text FROM passage_fts ORDER BY rowid",
        "SELECT rowid, vector FROM passage_vectors ORDER BY rowid",
    )
    return [corpus._db.execute(q).fetchall() for q in queries]


def test_a_failure_while_vectors_are_computed_keeps_what_the_corpus_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(corpus_vectors, "VECTOR_BATCH", 64)  # several batches from a small folder
    folder = tmp_path / "notes"
    _write_folder(folder, 40, "first")
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        first = corpus.add_folder(folder, "notes")
        assert first.added == 40 and first.passages > 3 * 64
        texts, blobs = _stored(corpus._db, every=1)
        assert blobs == to_blobs(reference_vectors(texts))
        before = _snapshot(corpus)

        _write_folder(folder, 40, "second")
        real = Embedder.tokens
        calls: list[int] = []

        def fails_on_the_second_batch(self: Embedder, batch: list[str]) -> Tokens:
            calls.append(len(batch))
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
            return real(self, batch)

        monkeypatch.setattr(Embedder, "tokens", fails_on_the_second_batch)
        with pytest.raises(CorpusWriteError, match="the corpus keeps what it held before"):
            corpus.add_folder(folder, "notes")
        assert len(calls) >= 2
        assert _snapshot(corpus) == before
        assert not [t for t in threading.enumerate() if t.name.startswith("embedding")]
        pieces = embedder().pieces
        assert pieces is not None and pieces.known == 1, "the call's pieces are forgotten"

        monkeypatch.setattr(Embedder, "tokens", real)
        again = corpus.add_folder(folder, "notes")
        assert again.updated == 40
        texts, blobs = _stored(corpus._db, every=1)
        assert all("(second)" in text for text in texts)
        assert blobs == to_blobs(reference_vectors(texts))


def test_the_pep_corpus_stores_each_documents_passages_in_order(pep_corpus_path: Path) -> None:
    """Passages inserted together, with the row ids SQLite would give one by one: each
    document's passages in order, its FTS rows the split of its text, the ids consecutive."""
    with Corpus(pep_corpus_path) as corpus:
        for path in sorted(PEPS.glob("*.rst"))[::70]:
            source_id = f"peps/{path.stem}"
            document = load_document(path, path.read_bytes())
            rows = corpus._db.execute(
                "SELECT p.rowid, p.passage_id, p.ordinal, f.title, f.section, f.text "
                "FROM passages p JOIN passage_fts f ON f.rowid = p.rowid "
                "WHERE p.source_id = ? ORDER BY p.rowid",
                (source_id,),
            ).fetchall()
            expected = split_passages(document.text)
            assert [(r[4], r[5]) for r in rows] == expected
            assert {r[3] for r in rows} == {document.title}
            assert [(r[1], r[2]) for r in rows] == [
                (f"{source_id}#{n}", n) for n in range(len(expected))
            ]
            assert [r[0] for r in rows] == list(range(rows[0][0], rows[0][0] + len(rows)))


QUERIES = ["structural pattern matching", "assignment expressions walrus", "asyncio coroutines"]


def _results(corpus: Corpus) -> list[list[tuple[str, float]]]:
    return [
        [(hit["passage_id"], round(hit["score"], 9)) for hit in corpus.search(query, limit=10)]
        for query in QUERIES
    ]


def _passages(corpus: Corpus) -> list[tuple[object, ...]]:
    """Every passage by its id: its text and vector (row ids change when a document does)."""
    return corpus._db.execute(
        "SELECT p.passage_id, f.title, f.section, f.text, v.vector FROM passages p "
        "JOIN passage_fts f ON f.rowid = p.rowid JOIN passage_vectors v ON v.rowid = p.rowid "
        "ORDER BY p.passage_id"
    ).fetchall()


def test_reindexing_gives_the_same_passages_vectors_and_search_results(tmp_path: Path) -> None:
    """A folder indexed, one document changed and indexed again, then restored and indexed
    again: the same passages, vectors and search results as the first time, and as a fresh
    file's; the vectors those of the plain computation."""
    skip_without_peps()
    folder = tmp_path / "peps"
    folder.mkdir()
    for path in sorted(PEPS.glob("*.rst"))[::12]:
        (folder / path.name).write_bytes(path.read_bytes())
    changed = sorted(folder.iterdir())[3]
    original = changed.read_bytes()
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        documents = corpus.add_folder(folder, "peps").added
        first, found = _passages(corpus), _results(corpus)
        assert sum(map(len, found)) == 30
        changed.write_bytes(original + b"\n\nA paragraph about sprockets and gears.\n")
        assert corpus.add_folder(folder, "peps").updated == 1
        assert _passages(corpus) != first
        changed.write_bytes(original)
        again = corpus.add_folder(folder, "peps")
        assert (again.updated, again.unchanged) == (1, documents - 1)
        assert _passages(corpus) == first
        assert _results(corpus) == found
        texts, blobs = _stored(corpus._db, every=1)
        assert blobs == to_blobs(reference_vectors(texts))
    with Corpus(tmp_path / "fresh.sqlite") as fresh:
        fresh.add_folder(folder, "peps")
        assert _passages(fresh) == first
        assert _results(fresh) == found
