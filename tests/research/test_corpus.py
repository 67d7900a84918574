"""The corpus: loaders and their dates, incremental re-index, ranking, unreadable files, the default corpus."""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path

import pytest

from research.corpus import Corpus, CorpusRetriever
from research.dates import parse_date, parse_dates
from research.default_corpus import DEFAULT_COLLECTION, build_default_corpus, ensure_default_corpus
from research.loaders import load_document, split_passages

RST = """PEP: 9999
Title: Frobnication of Widgets
Author: A. Person <a@example.org>
Status: Final
Type: Standards Track
Created: 05-Jul-2001
Post-History: 05-Jul-2001, 01-Aug-2013
Superseded-By: 10000

Abstract
========

This document specifies how widgets are frobnicated by the interpreter in a predictable order.
"""

MARKDOWN = """---
title: Widget guide
date: 2024-03-01
updated: 2024-05-02
status: Draft
---

# Ignored heading

Widgets are frobnicated quickly when the cache is warm and the queue is short.
"""

HTML = """<html><head><title>Widget news</title>
<meta property="article:published_time" content="2023-01-15T10:00:00Z">
<meta property="article:modified_time" content="2023-02-01">
<script>var frobnicate = 1;</script></head>
<body><nav>menu</nav><p>Widget news: frobnication became twice as fast in the new release.</p></body></html>
"""

TEXT = "Plain notes about widgets\n\nWidgets wobble when frobnicated without a lock held by the caller.\n"


def pdf_bytes(text: str, created: str = "D:20220304120000Z") -> bytes:
    """A minimal one-page PDF with a text layer and an /Info creation date."""
    stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title (Widget paper) /CreationDate ({created}) >>".encode(),
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R /Info 6 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "pep-9999.rst").write_text(RST)
    (root / "guide.md").write_text(MARKDOWN)
    (root / "news.html").write_text(HTML)
    (root / "notes.txt").write_text(TEXT)
    (root / "paper.pdf").write_bytes(pdf_bytes("Widgets are frobnicated in batches of seven"))
    return root


@pytest.mark.parametrize(
    "text,expected",
    [
        ("05-Jul-2001", date(2001, 7, 5)),
        ("2024-03-01", date(2024, 3, 1)),
        ("5 July 2001", date(2001, 7, 5)),
        ("July 5, 2001", date(2001, 7, 5)),
        ("D:20220304120000Z", date(2022, 3, 4)),
        ("no date here", None),
    ],
)
def test_dates_in_their_spellings(text: str, expected: date | None) -> None:
    assert parse_date(text) == expected


def test_a_post_history_list() -> None:
    assert parse_dates("05-Jul-2001, 01-Aug-2013") == [date(2001, 7, 5), date(2013, 8, 1)]


@pytest.mark.parametrize(
    "name,title,published,updated,status",
    [
        ("pep-9999.rst", "Frobnication of Widgets", date(2001, 7, 5), date(2013, 8, 1), "Final"),
        ("guide.md", "Widget guide", date(2024, 3, 1), date(2024, 5, 2), "Draft"),
        ("news.html", "Widget news", date(2023, 1, 15), date(2023, 2, 1), ""),
        ("notes.txt", "Plain notes about widgets", None, None, ""),
        ("paper.pdf", "Widget paper", date(2022, 3, 4), None, ""),
    ],
)
def test_every_loader_and_its_metadata(
    folder: Path, name: str, title: str, published, updated, status
) -> None:
    path = folder / name
    document = load_document(path, path.read_bytes())
    assert (document.title, document.published, document.updated, document.status) == (
        title,
        published,
        updated,
        status,
    )
    assert "widget" in document.text.lower()


def test_rst_fields_and_html_cleanup(folder: Path) -> None:
    rst = load_document(folder / "pep-9999.rst", (folder / "pep-9999.rst").read_bytes())
    assert (
        rst.superseded_by == "10000"
        and rst.kind == "specification"
        and "Post-History" not in rst.text
    )
    html = load_document(folder / "news.html", (folder / "news.html").read_bytes())
    assert "var frobnicate" not in html.text and "menu" not in html.text


def test_index_search_and_incremental_reindex(folder: Path, tmp_path: Path) -> None:
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        first = corpus.add_folder(folder, "docs")
        assert (first.added, first.skipped) == (5, [])
        hits = corpus.search("frobnicated widgets", limit=10)
        assert {h["source_id"] for h in hits} >= {"docs/pep-9999", "docs/guide", "docs/paper"}
        assert all("[" in h["snippet"] for h in hits)
        assert corpus.document("docs/pep-9999").published == date(2001, 7, 5)

        again = corpus.add_folder(folder, "docs")
        assert (again.added, again.updated, again.unchanged) == (0, 0, 5)
        (folder / "notes.txt").write_text(
            TEXT + "\nA new paragraph about gizmos and their sprockets.\n"
        )
        (folder / "guide.md").unlink()
        changed = corpus.add_folder(folder, "docs")
        assert (changed.added, changed.updated, changed.unchanged, changed.removed) == (0, 1, 3, 1)
        assert corpus.search("sprockets")[0]["source_id"] == "docs/notes"
        assert not [
            h for h in corpus.search("quickly warm cache") if h["source_id"] == "docs/guide"
        ]


def test_ranking_puts_the_document_about_the_terms_first(tmp_path: Path) -> None:
    root = tmp_path / "ranked"
    root.mkdir()
    (root / "about.md").write_text(
        "# Sprocket tuning\n\nSprocket tuning: sprockets need tuning. Tune sprockets "
        "weekly; sprocket tuning keeps sprockets quiet.\n"
    )
    (root / "mention.md").write_text(
        "# Garden\n\nThe garden shed holds tools, seeds, a sprocket and many "
        "other things that have nothing to do with this topic at all.\n"
    )
    with Corpus(tmp_path / "c.sqlite") as corpus:
        corpus.add_folder(root)
        hits = corpus.search("sprocket tuning")
        assert [h["source_id"] for h in hits] == ["ranked/about", "ranked/mention"]
        assert hits[0]["score"] > hits[1]["score"]
        recent = corpus.search("sprocket", published_after="2020-01-01")
        assert recent == []


def test_a_date_range_keeps_documents_dated_inside_it_as_recency_scoring_does(
    tmp_path: Path,
) -> None:
    """A recency search bounded by as_of must not return documents that are not recent as of that day.

    The recency remediation round used to search with ``published_after`` only,
    so it fetched documents first published after ``as_of`` and documents
    dated inside the window only by an update after ``as_of`` — sources that
    ``effective_date`` does not count as recent, which diluted recency instead
    of raising it.
    """
    root = tmp_path / "dated"
    root.mkdir()
    dates = {
        "inside": ("2025-05-01", None),
        "updated_inside": ("2019-01-01", "2025-06-01"),
        "after_as_of": ("2025-09-01", None),
        "updated_after_as_of": ("2022-01-01", "2026-01-01"),
        "old": ("2019-01-01", "2020-01-01"),
        "undated": (None, None),
    }
    for name, (published, updated) in dates.items():
        front = "".join(
            f"{key}: {value}\n"
            for key, value in (("date", published), ("updated", updated))
            if value
        )
        (root / f"{name}.md").write_text(
            f"---\ntitle: {name}\n{front}---\n\nSprocket notes for {name}.\n"
        )
    with Corpus(tmp_path / "c.sqlite") as corpus:
        corpus.add_folder(root)

        def found(**options: str) -> set[str]:
            return {
                h["source_id"].split("/")[1] for h in corpus.search("sprocket", limit=20, **options)
            }

        assert found(published_after="2025-04-01", published_before="2025-06-30") == {
            "inside",
            "updated_inside",
        }
        assert found(published_after="2025-04-01") == {
            "inside",
            "updated_inside",
            "after_as_of",
            "updated_after_as_of",
        }
        assert found(published_before="2020-06-30") == {"updated_inside", "old"}


def test_unreadable_and_binary_files_are_reported_and_skipped(folder: Path, tmp_path: Path) -> None:
    (folder / "binary.txt").write_bytes(b"\x00\x01\x02garbage" * 50)
    (folder / "latin1.md").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    (folder / "empty.md").write_text("   \n")
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        report = corpus.add_folder(folder)
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert set(reasons) == {"binary.txt", "latin1.md", "broken.pdf", "empty.md"}
    assert "binary" in reasons["binary.txt"] and "UTF-8" in reasons["latin1.md"]
    assert report.added == 5


def test_a_missing_folder_is_one_clear_error(tmp_path: Path) -> None:
    with (
        Corpus(tmp_path / "c.sqlite") as corpus,
        pytest.raises(FileNotFoundError, match="not a folder"),
    ):
        corpus.add_folder(tmp_path / "nope")


def test_passages_do_not_split_mid_paragraph_and_short_sections_run_on() -> None:
    text = "Intro\n=====\n\n.. label:\n\nBody\n====\n\n" + "\n\n".join(
        f"Paragraph {i} " + "word " * 60 for i in range(6)
    )
    pieces = split_passages(text)
    assert all(p[1].count("Paragraph") >= 1 for p in pieces)
    assert not any(p[1].strip() == ".. label:" for p in pieces)


def test_the_default_corpus_reads_docstrings_with_ast_never_importing(tmp_path: Path) -> None:
    stdlib = tmp_path / "lib"
    (stdlib / "test").mkdir(parents=True)
    marker = tmp_path / "imported"
    (stdlib / "widgets.py").write_text(
        f'"""Widgets: frobnicate things in order, a long enough module docstring for the default corpus to keep.\n\n'
        f'It explains widgets at length so that the document passes the minimum size of two hundred characters."""\n'
        f'open({str(marker)!r}, "w").write("side effect")\n\n'
        f'def frobnicate(x):\n    """Frobnicate x and return it."""\n    return x\n'
    )
    (stdlib / "test" / "test_widgets.py").write_text('"""Tests are skipped."""\n')
    with Corpus(tmp_path / "c.sqlite") as corpus:
        report = build_default_corpus(corpus, stdlib=stdlib)
        assert not marker.exists()
        assert corpus.document(f"{DEFAULT_COLLECTION}/stdlib/widgets") is not None
        assert corpus.document(f"{DEFAULT_COLLECTION}/stdlib/test.test_widgets") is None
        assert report.added >= 2  # pydoc topics and the module
        assert corpus.document(f"{DEFAULT_COLLECTION}/stdlib/widgets").kind == "reference"
        assert ensure_default_corpus(corpus) is None


def test_the_retriever_protocol_over_the_corpus(folder: Path, tmp_path: Path) -> None:
    with Corpus(tmp_path / "c.sqlite") as corpus:
        corpus.add_folder(folder, "docs")
        retriever = CorpusRetriever(corpus, ["docs"])
        hits = asyncio.run(retriever.search("widgets", limit=2, exclude_sources=["docs/guide"]))
        assert len(hits) == 2 and all(h["source_id"] != "docs/guide" for h in hits)
        assert asyncio.run(CorpusRetriever(corpus, ["other"]).search("widgets")) == []
