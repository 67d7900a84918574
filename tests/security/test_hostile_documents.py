"""Hostile corpus documents (issue 27, item 5): real files, real symlinks, the real corpus.

A folder given to ``corpus add`` is the attacker's: symlinks out of it (``notes.md ->
~/.ssh/id_rsa``), a file of hundreds of MiB, PDF bombs (one stream that inflates past pypdf's
limits; many pages sharing one huge content stream, each parsed again), a paragraph of many
MiB on one line. Each such document is skipped with its reason on one line and the rest of the
folder indexes; what the corpus held is kept.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import tracemalloc
import zlib
from contextlib import closing
from pathlib import Path

import pytest
import yaml

from research.corpus import Corpus
from research.corpus_files import OUTSIDE, list_folder, read_document
from research.corpus_limits import MIB, CorpusLimits
from research.loaders import UnreadableDocument, split_passages
from tests.cli.test_engine_cli import workbench
from tests.pdf_bytes import pdf_bytes

pytestmark = pytest.mark.timeout(300)

GOOD = "# Widgets\n\nWidgets are frobnicated in batches of seven by the scheduler.\n"
SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- zebracanary -----END OPENSSH PRIVATE KEY-----\n"
TEXT_OP = b"BT /F1 12 Tf 72 712 Td (widgets are frobnicated) Tj ET\n"


def pdf(content: bytes, pages: int = 1) -> bytes:
    """A PDF of ``pages`` pages that all draw one FlateDecode content stream, ``content``."""
    stream = zlib.compress(content, 9)
    kids = " ".join(f"{5 + page} 0 R" for page in range(pages)).encode()
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 3 0 R >> >> >>"
    )
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count " + str(pages).encode() + b" >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream),
        *[page] * pages,
    ]
    return pdf_bytes(objects)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A corpus folder with one good document."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text(GOOD, encoding="utf-8")
    return docs


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the corpus folder, holding what must never be indexed."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa.md").write_text(SECRET, encoding="utf-8")
    return home


def config(tmp_path: Path, **corpus: object) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"corpus": corpus}), encoding="utf-8")
    return path


def skipped_lines(stdout: str) -> dict[str, str]:
    """``skipped <path>: <reason>`` lines of ``corpus add``, by file name."""
    lines = [line.removeprefix("skipped ") for line in stdout.splitlines()]
    return {
        Path(path).name: reason
        for path, _, reason in (line.partition(": ") for line in lines if line.startswith("/"))
    }


def indexed(workspace: Path) -> set[str]:
    """The documents the corpus file holds, read from its table as stored."""
    with closing(sqlite3.connect(workspace / "corpus.sqlite")) as db:
        return {row[0] for row in db.execute("SELECT source_id FROM documents")}


def test_symlinks_out_of_the_folder_are_skipped_and_listed_never_indexed(
    tmp_path: Path, folder: Path, outside: Path
) -> None:
    (folder / "notes.md").symlink_to(outside / ".ssh" / "id_rsa.md")
    (folder / "ssh").symlink_to(outside / ".ssh", target_is_directory=True)
    (folder / "again.md").symlink_to(folder / "guide.md")  # inside: indexed under its name
    (folder / "sub").mkdir()
    (folder / "sub" / "up").symlink_to(folder, target_is_directory=True)  # inside: walked once

    added = workbench(tmp_path / "ws", "corpus", "add", str(folder))

    assert added.returncode == 0, added.stderr
    assert skipped_lines(added.stdout) == {"notes.md": OUTSIDE, "ssh": OUTSIDE}
    (summary,) = [line for line in added.stdout.splitlines() if line.startswith("docs: ")]
    assert summary.startswith("docs: 2 added, 0 updated")
    assert indexed(tmp_path / "ws") == {"docs/guide", "docs/again"}
    with Corpus(tmp_path / "ws" / "corpus.sqlite") as corpus:
        assert not corpus.search("zebracanary")
    assert "Traceback" not in added.stdout + added.stderr


def test_following_symlinks_out_of_the_folder_is_an_option_off_by_default(
    tmp_path: Path, folder: Path, outside: Path
) -> None:
    (folder / "notes.md").symlink_to(outside / ".ssh" / "id_rsa.md")
    (folder / "ssh").symlink_to(outside / ".ssh", target_is_directory=True)
    (folder / "ssh-again").symlink_to(outside / ".ssh", target_is_directory=True)
    settings = config(tmp_path, follow_symlinks=True)

    added = workbench(tmp_path / "ws", "--config", str(settings), "corpus", "add", str(folder))

    assert added.returncode == 0, added.stderr
    assert skipped_lines(added.stdout) == {}
    assert indexed(tmp_path / "ws") == {"docs/guide", "docs/notes", "docs/ssh/id_rsa"}


def test_a_symlink_indexed_before_is_removed_once_refused(
    tmp_path: Path, folder: Path, outside: Path
) -> None:
    (folder / "notes.md").symlink_to(outside / ".ssh" / "id_rsa.md")
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        corpus.add_folder(folder, limits=CorpusLimits(follow_symlinks=True))
        assert "docs/notes" in {hit["source_id"] for hit in corpus.search("zebracanary")}
        report = corpus.add_folder(folder)
        assert report.removed == 1 and not corpus.search("zebracanary")


def test_a_file_swapped_for_a_symlink_after_the_listing_is_not_followed(
    folder: Path, outside: Path
) -> None:
    swapped = folder / "later.md"
    swapped.symlink_to(outside / ".ssh" / "id_rsa.md")
    fifo = folder / "pipe.md"
    os.mkfifo(fifo)

    with pytest.raises(UnreadableDocument, match="became a symlink while it was indexed"):
        read_document(swapped, CorpusLimits())
    with pytest.raises(UnreadableDocument, match="is not a regular file"):
        read_document(fifo, CorpusLimits())  # opened without blocking, refused unread


def test_a_document_past_the_size_bound_is_skipped_and_read_no_further(
    tmp_path: Path, folder: Path
) -> None:
    (folder / "grows.txt").write_text("Notes on widgets\n\nWidgets grow.\n", encoding="utf-8")
    settings = config(tmp_path, max_document_mb=2)
    first = workbench(tmp_path / "ws", "--config", str(settings), "corpus", "add", str(folder))
    assert first.returncode == 0, first.stderr
    (folder / "huge.txt").write_bytes(b"widgets " * (6 * MIB // 8))  # 6 MiB, one line
    (folder / "grows.txt").write_bytes(b"widgets " * (3 * MIB // 8))  # indexed while small

    added = workbench(tmp_path / "ws", "--config", str(settings), "corpus", "add", str(folder))

    assert added.returncode == 0, added.stderr
    assert skipped_lines(added.stdout) == {
        name: f"{name}: the file passes corpus.max_document_mb (2 MiB); "
        "split it, or raise the bound in the config"
        for name in ("grows.txt", "huge.txt")
    }
    assert indexed(tmp_path / "ws") == {"docs/guide", "docs/grows"}  # as indexed before
    with Corpus(tmp_path / "ws" / "corpus.sqlite") as corpus:
        assert corpus.search("grow")
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableDocument):
            read_document(folder / "huge.txt", CorpusLimits(max_document_bytes=2 * MIB))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * MIB, f"refusing the file read {peak / MIB:.1f} MiB of it"


def test_a_pdf_bomb_is_skipped_with_its_reason_and_the_rest_indexes(
    tmp_path: Path, folder: Path
) -> None:
    (folder / "bomb.pdf").write_bytes(pdf(TEXT_OP + b" " * 80_000_000))  # ~80 KB on disk
    (folder / "long.pdf").write_bytes(pdf(TEXT_OP, pages=6))
    (folder / "paper.pdf").write_bytes(pdf(TEXT_OP))
    settings = config(tmp_path, max_pdf_pages=5)

    added = workbench(tmp_path / "ws", "--config", str(settings), "corpus", "add", str(folder))

    assert added.returncode == 0, added.stderr
    assert skipped_lines(added.stdout) == {
        "bomb.pdf": "bomb.pdf: a stream inflates past pypdf's limits (a PDF bomb?); "
        "re-export it or add a text version",
        "long.pdf": "long.pdf has 6 pages, more than 5 read; split it into smaller PDFs",
    }
    assert indexed(tmp_path / "ws") == {"docs/guide", "docs/paper"}
    assert "Traceback" not in added.stdout + added.stderr


def test_pages_sharing_one_huge_content_stream_are_refused_before_any_is_parsed(
    tmp_path: Path, folder: Path
) -> None:
    (folder / "shared.pdf").write_bytes(pdf(TEXT_OP * 20_000, pages=3000))
    (folder / "paper.pdf").write_bytes(pdf(TEXT_OP * 100, pages=3))

    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        report = corpus.add_folder(folder)

    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [
        (
            "shared.pdf",
            "shared.pdf: its pages' content passes 32 MiB once inflated (a PDF bomb?); "
            "re-export it or add a text version",
        )
    ]
    assert report.added == 2


def test_a_parser_failing_on_a_document_skips_that_document_only(
    tmp_path: Path, folder: Path
) -> None:
    """Whatever the parser raises is a reason: here pypdf's RecursionError on arrays nested
    50,000 deep in a page's content."""
    (folder / "nested.pdf").write_bytes(pdf(TEXT_OP + b"[" * 50_000 + b"]" * 50_000 + b" TJ\n"))
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        report = corpus.add_folder(folder)
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [
        (
            "nested.pdf",
            "nested.pdf could not be read (RecursionError); "
            "re-export it or remove it from the folder",
        )
    ]
    assert report.added == 1


def test_one_long_paragraph_is_split_whole_into_bounded_passages() -> None:
    sentence = "Widgets are frobnicated in batches of seven. "
    text = (sentence * 40_000).strip() + " " + "x" * 5000  # ~1.8 MB on one line, a run at its end

    passages = split_passages(text)

    assert all(len(body) <= 1600 for _, body in passages)
    assert "".join(body.replace(" ", "") for _, body in passages) == text.replace(" ", "")
    assert passages[0][1] == (sentence * 35).strip()


def test_a_heading_of_megabytes_is_not_repeated_into_every_passage(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    long_heading = "widgets " * 125_000  # 1 MB on one heading line
    body = "\n\n".join(f"Gadget {n} is frobnicated in batches of seven." * 8 for n in range(40))
    (docs / "long.md").write_text(f"# {long_heading}\n\n{body}\n", encoding="utf-8")
    (docs / "underlined.rst").write_text(
        f"{long_heading}\n{'=' * 20}\n\n{body}\n", encoding="utf-8"
    )

    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        report = corpus.add_folder(docs)
    assert report.added == 2, report.skipped

    with closing(sqlite3.connect(tmp_path / "corpus.sqlite")) as db:
        titles = [row[0] for row in db.execute("SELECT title FROM documents ORDER BY source_id")]
        stored = db.execute(
            "SELECT count(*), max(length(title)), max(length(section)), sum(length(text))"
            " FROM passage_fts"
        ).fetchone()
    assert titles[0].startswith("widgets widgets") and titles[0].endswith("\u2026")
    assert all(len(title) <= 300 for title in titles)
    passages, longest_title, longest_section, text_chars = stored
    assert passages > 2 * 2  # the heading's text and the body, each in several passages
    assert longest_title <= 300 and longest_section <= 300
    assert text_chars >= 2 * len(long_heading.strip())  # the heading line's text is kept, once


def test_a_name_or_title_with_line_breaks_cannot_forge_a_line_of_output(
    tmp_path: Path, folder: Path, outside: Path
) -> None:
    """A file name, a symlink's name and an HTML title may hold line breaks; printed as they
    are, each would start a line of its own that reads as the workbench's (``error: …``)."""
    forged = "\nerror: forged"
    (folder / f"named{forged}.md").write_text(GOOD, encoding="utf-8")
    (folder / f"link{forged}.md").symlink_to(outside / ".ssh" / "id_rsa.md")
    (folder / "titled.html").write_text(
        f"<html><head><title>Widgets{forged} title</title></head>"
        "<body><p>Widgets are frobnicated by the titled page.</p></body></html>",
        encoding="utf-8",
    )

    added = workbench(tmp_path / "ws", "corpus", "add", str(folder))
    assert indexed(tmp_path / "ws") == {"docs/guide", f"docs/named{forged}", "docs/titled"}
    searched = workbench(tmp_path / "ws", "corpus", "search", "frobnicated", "--collection", "docs")

    assert added.returncode == 0 and searched.returncode == 0, added.stderr + searched.stderr
    assert f"skipped {folder}/link error: forged.md: {OUTSIDE}" in added.stdout.splitlines()
    hits = [line.split(maxsplit=1)[-1] for line in searched.stdout.splitlines()]
    assert "docs/named error: forged#0  Widgets (-, undated)" in hits
    assert "docs/titled#0  Widgets error: forged title (-, undated)" in hits
    for output in (added.stdout, searched.stdout):
        assert not [line for line in output.splitlines() if line.startswith("error:")], output


def test_a_folder_swapped_for_a_symlink_after_the_listing_is_not_followed(
    folder: Path, outside: Path
) -> None:
    """``O_NOFOLLOW`` guards a path's last name only: a folder on the way to a listed file,
    swapped for a link out of the corpus folder after the listing, must not lead there either."""
    (folder / "sub").mkdir()
    (folder / "sub" / "id_rsa.md").write_text(GOOD, encoding="utf-8")
    [(_, real)] = [
        (named, real)
        for named, real in list_folder(folder.resolve(), CorpusLimits()).files
        if named.name == "id_rsa.md"
    ]
    (folder / "sub").rename(folder / "sub-before")
    (folder / "sub").symlink_to(outside / ".ssh", target_is_directory=True)

    with pytest.raises(UnreadableDocument, match="sub is no longer a folder"):
        read_document(real, CorpusLimits())
    assert read_document(folder / "sub-before" / "id_rsa.md", CorpusLimits()) == GOOD.encode()


@pytest.mark.skipif(
    os.geteuid() != 0, reason="needs root to read as another user (CI runs as root)"
)
def test_a_document_under_a_folder_others_may_only_pass_through_is_read() -> None:
    """A home folder of mode 711 lets others pass through it, not list it: a document under it is
    read, though its path is opened one name at a time (a child process reads it as ``nobody``)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as scratch:
        home = Path(scratch) / "home"
        (home / "notes").mkdir(parents=True)
        document = home / "notes" / "wheels.md"
        document.write_text(GOOD)
        for folder in (Path(scratch), home, home / "notes"):
            folder.chmod(0o711)
        document.chmod(0o644)
        child = os.fork()
        if child == 0:  # the child: drop to nobody, read, report by exit code only
            try:
                os.setgid(65534)
                os.setuid(65534)
                os._exit(0 if read_document(document, CorpusLimits()) == GOOD.encode() else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
