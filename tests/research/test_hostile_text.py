"""Lone surrogates in text from outside: a PDF's text layer, a file name that is not UTF-8, a
query typed on a command line. None can be encoded (UTF-8 for SQLite and the content hash,
UTF-32 for the embedder's pieces), so each must be made well formed before it gets there: the
document is indexed (or, for a name, skipped with its reason) and the rest of the folder, and
what the corpus held, stay as they were."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from research.corpus import Corpus
from research.corpus_files import NOT_UTF8_NAME
from research.embeddings import embedder, to_blobs
from research.loaders import load_document, well_formed
from research.sentence_encoder import sentence_encoder
from tests.cli.test_engine_cli import workbench
from tests.pdf_bytes import pdf_bytes

GOOD = "# Widgets\n\nWidgets are frobnicated in batches of seven by the scheduler.\n"
TO_UNICODE = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
1 begincodespacerange
<00> <FF>
endcodespacerange
2 beginbfchar
<58> <D800>
<59> <D83DDE00>
endbfchar
endcmap
CMapName currentdict /CMap defineresource pop
end
end"""
"""A ToUnicode map sending ``X`` to a lone high surrogate and ``Y`` to a pair (U+1F600)."""


def surrogate_pdf(text: bytes) -> bytes:
    """A one-page PDF drawing ``text`` with a font whose ToUnicode map is :data:`TO_UNICODE`."""
    stream = b"BT /F1 12 Tf 72 712 Td (" + text + b") Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(TO_UNICODE), TO_UNICODE),
    ]
    return pdf_bytes(objects)


PDF_TEXT = b"Widgets X are wobbled Y by the frobnicator in batches of eleven"


def stored(corpus_file: Path) -> dict[str, tuple[str, str, bytes]]:
    """Each passage as stored: its title, text and vector, by passage id."""
    with closing(sqlite3.connect(corpus_file)) as db:
        rows = db.execute(
            "SELECT p.passage_id, f.title, f.text, v.vector FROM passages p "
            "JOIN passage_fts f ON f.rowid = p.rowid "
            "JOIN passage_vectors v ON v.rowid = p.rowid"
        )
        return {row[0]: (row[1], row[2], row[3]) for row in rows}


def test_the_pdf_does_give_a_lone_surrogate() -> None:
    """What the fix is for: pypdf reads the text layer with ``surrogatepass``."""
    from io import BytesIO

    from pypdf import PdfReader

    text = PdfReader(BytesIO(surrogate_pdf(PDF_TEXT))).pages[0].extract_text()
    assert "\ud800" in text


def test_a_lone_surrogate_is_read_as_the_replacement_character_a_pair_as_its_character() -> None:
    assert well_formed("a\ud800b\ud83d\ude00c\udce9") == "a\ufffdb\U0001f600c\ufffd"
    text = "plain ascii and ünïcödé"
    assert well_formed(text) is text


@pytest.mark.timeout(300)
def test_corpus_add_indexes_a_pdf_with_a_lone_surrogate_skips_a_name_that_is_not_utf8(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text(GOOD, encoding="utf-8")
    workspace = tmp_path / "ws"
    first = workbench(workspace, "corpus", "add", str(folder))
    assert first.returncode == 0, first.stderr
    before = stored(workspace / "corpus.sqlite")

    (folder / "paper.pdf").write_bytes(surrogate_pdf(PDF_TEXT))
    Path(os.fsdecode(bytes(folder) + b"/caf\xe9.md")).write_bytes(GOOD.encode())
    added = workbench(workspace, "corpus", "add", str(folder))

    assert added.returncode == 0, added.stderr
    assert "Traceback" not in added.stdout + added.stderr
    assert "error" not in added.stdout + added.stderr
    (summary,) = [line for line in added.stdout.splitlines() if line.startswith("docs: ")]
    assert summary.startswith("docs: 1 added, 0 updated, 1 unchanged, 0 removed, 1 skipped")
    assert f"caf<U+DCE9>.md: {NOT_UTF8_NAME}" in added.stdout
    after = stored(workspace / "corpus.sqlite")
    assert {k: v for k, v in after.items() if k in before} == before  # nothing else changed
    (pdf_passage,) = [v for k, v in after.items() if k.startswith("docs/paper#")]
    assert "Widgets \ufffd are wobbled \U0001f600 by the frobnicator" in pdf_passage[1]
    document = load_document(folder / "paper.pdf", (folder / "paper.pdf").read_bytes())
    expected = embedder().embed([f"{document.title}\n\n{document.text}"])[0]
    assert pdf_passage[2] == to_blobs(expected[None])[0]
    with Corpus(workspace / "corpus.sqlite") as corpus:
        assert corpus.search("frobnicator eleven")[0]["source_id"] == "docs/paper"


def test_a_query_with_a_lone_surrogate_is_embedded_as_its_replacement() -> None:
    query = "widgets \udcff frobnicated"
    replaced = "widgets \ufffd frobnicated"
    assert embedder().embed([query]).tolist() == embedder().embed([replaced]).tolist()
    assert (
        sentence_encoder().encode([query]).tolist()
        == sentence_encoder().encode([replaced]).tolist()
    )
