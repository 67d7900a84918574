"""A document indexed by an older version of the indexing code is derived again
(research/corpus_derivation.py): its passages, vectors and cached head follow today's code,
while an unchanged document under today's stamp is still neither read nor embedded."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

import research.corpus
from research.corpus import Corpus, CorpusWriteError
from research.corpus_records import REASON_CHARACTERS, OutdatedCollection
from research.loaders import LoadedDocument, split_passages
from tests.research.test_cli import docs
from tui.cli import cli

GUIDE = (
    "# Frobnicating widgets\n\n"
    + " ".join(["A widget is frobnicated by turning its crank until it reads twelve."] * 8)
    + "\n\n## Short\n\nA stub.\n\n## Cleaning\n\n"
    + " ".join(["A frobnicated widget is cleaned with a soft brush, never water."] * 8)
)


def whole(text: str) -> list[tuple[str, str]]:
    """An older splitter: the whole text in one passage."""
    return [("", text)]


def _folder(tmp_path: Path) -> Path:
    root = tmp_path / "frob"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE)
    return root


def _passages(corpus: Corpus) -> list[str]:
    return [
        row[0]
        for row in corpus._db.execute(
            "SELECT f.text FROM passages p JOIN passage_fts f ON f.rowid = p.rowid "
            "ORDER BY p.ordinal"
        )
    ]


def _indexed_by_the_old_splitter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stamp: str | None
) -> tuple[Path, Path]:
    """A corpus file whose one document was split by :func:`whole`, stamped with ``stamp``
    (None: no stamp at all, as in a file written before stamps existed)."""
    root = _folder(tmp_path)
    path = tmp_path / "corpus.sqlite"
    with monkeypatch.context() as patch:
        patch.setattr(research.corpus, "split_passages", whole)
        with Corpus(path) as corpus:
            corpus.add_folder(root, "frob")
    db = sqlite3.connect(path)
    with db:
        if stamp is None:
            db.execute("DROP TABLE IF EXISTS document_derivation")
        else:
            db.execute("UPDATE document_derivation SET stamp = ?", (stamp,))
    db.close()
    return root, path


@pytest.mark.parametrize("stamp", [None, "passages=1"], ids=["no stamp", "an older stamp"])
def test_a_document_indexed_by_an_older_splitter_is_split_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stamp: str | None
) -> None:
    root, path = _indexed_by_the_old_splitter(tmp_path, monkeypatch, stamp)
    with Corpus(path) as corpus:
        assert _passages(corpus) == [GUIDE]
        assert corpus.needs_reindex("frob")
        report = corpus.add_folder(root, "frob")
        assert (report.rederived, report.updated, report.unchanged) == (1, 0, 0)
        assert "1 re-indexed (indexed by an older version)" in report.summary()
        assert _passages(corpus) == [text for _, text in split_passages(GUIDE)]
        assert len(corpus.vectors().rowids) == len(split_passages(GUIDE))
        assert not corpus.needs_reindex("frob") and corpus.outdated() == []


def test_an_unchanged_document_under_todays_stamp_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _folder(tmp_path)
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        corpus.add_folder(root, "frob")

        def never(*_: object) -> None:
            raise AssertionError("an unchanged document was read again")

        monkeypatch.setattr(research.corpus, "load_document", never)
        monkeypatch.setattr(research.corpus, "split_passages", never)
        report = corpus.add_folder(root, "frob")
        assert (report.unchanged, report.rederived, report.updated) == (1, 0, 0)
        assert "re-indexed" not in report.summary()


def test_loaded_documents_under_an_older_stamp_are_derived_again(tmp_path: Path) -> None:
    """The default collection's path (documents given already read): the same rule."""
    document = LoadedDocument(title="Frobnication", text=GUIDE)
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        corpus.add_documents("docs", "here", [("guide", "x:guide", document)])
        corpus._db.execute("UPDATE document_derivation SET stamp = 'vectors=0'")
        corpus._db.commit()
        assert corpus.needs_reindex("docs")
        report = corpus.add_documents("docs", "here", [("guide", "x:guide", document)])
        assert report.rederived == 1 and not corpus.needs_reindex("docs")
        again = corpus.add_documents("docs", "here", [("guide", "x:guide", document)])
        assert (again.unchanged, again.rederived) == (1, 0)


def test_a_failed_rederivation_keeps_what_was_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, path = _indexed_by_the_old_splitter(tmp_path, monkeypatch, "passages=1")

    def full_disk(_: str) -> list[tuple[str, str]]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(research.corpus, "split_passages", full_disk)
    with Corpus(path) as corpus:
        with pytest.raises(CorpusWriteError, match="keeps what it held before"):
            corpus.add_folder(root, "frob")
        assert _passages(corpus) == [GUIDE]
        assert corpus.needs_reindex("frob")


def test_a_stamp_left_behind_by_a_removed_document_does_not_stop_adding_it_again(
    tmp_path: Path,
) -> None:
    """A stamp whose document row is gone (as code that did not know the table would leave it)
    is replaced when the document is added again, not a uniqueness error."""
    root = _folder(tmp_path)
    path = tmp_path / "corpus.sqlite"
    with Corpus(path) as corpus:
        corpus.add_folder(root, "frob")
        corpus._db.execute("DELETE FROM passage_fts")
        corpus._db.execute("DELETE FROM passage_vectors")
        corpus._db.execute("DELETE FROM passages")
        corpus._db.execute("DELETE FROM documents")
        corpus._db.commit()
        report = corpus.add_folder(root, "frob")
        assert report.added == 1
        assert not corpus.needs_reindex("frob")


def test_code_from_before_the_stamp_refuses_the_file(tmp_path: Path) -> None:
    """The file's schema version is past what code without ``document_derivation`` reads."""
    path = tmp_path / "corpus.sqlite"
    with Corpus(path) as corpus:
        corpus.add_folder(_folder(tmp_path), "frob")
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == research.corpus.SCHEMA_VERSION > 3
    db.close()


def test_the_cached_head_of_an_outdated_document_is_dropped_on_open(tmp_path: Path) -> None:
    path = tmp_path / "corpus.sqlite"
    with Corpus(path) as corpus:
        corpus.add_folder(_folder(tmp_path), "frob")
        corpus._db.execute(
            "INSERT INTO document_heads(source_id, content_hash, vector) "
            "SELECT source_id, content_hash, x'00' FROM documents"
        )
        corpus._db.commit()
    with Corpus(path) as corpus:  # today's stamp: the cache stays
        assert corpus._db.execute("SELECT COUNT(*) FROM document_heads").fetchone()[0] == 1
        corpus._db.execute("UPDATE document_derivation SET stamp = 'heads=0'")
        corpus._db.commit()
    with Corpus(path) as corpus:
        assert corpus._db.execute("SELECT COUNT(*) FROM document_heads").fetchone()[0] == 0


def test_the_cli_says_which_collection_is_outdated_and_what_to_run(tmp_path: Path) -> None:
    runner = CliRunner()
    workspace = tmp_path / "ws"
    folder = docs(tmp_path)
    added = runner.invoke(cli, ["--workspace", str(workspace), "corpus", "add", str(folder)])
    assert added.exit_code == 0, added.output
    db = sqlite3.connect(workspace / "corpus.sqlite")
    with db:
        db.execute(
            "UPDATE document_derivation SET stamp = 'passages=1' WHERE source_id LIKE 'widgets/%'"
        )
    db.close()
    search = ["--workspace", str(workspace), "corpus", "search", "widgets"]
    found = runner.invoke(cli, search)
    assert found.exit_code == 0, found.output
    assert (
        "widgets: 4 document(s) were indexed by an older version of the workbench" in found.output
        and f"workbench corpus add {folder} --name widgets" in found.output
    )
    again = runner.invoke(cli, ["--workspace", str(workspace), "corpus", "add", str(folder)])
    assert "4 re-indexed" in again.output
    assert "older version" not in runner.invoke(cli, search).output


def test_an_outdated_document_that_cannot_be_read_again_is_not_sent_to_re_index_forever(
    tmp_path: Path,
) -> None:
    """A document indexed by an older version that today's limits refuse keeps its old stamp;
    the notice says how many could not be read, and why, instead of asking for a re-index that
    cannot help — until the limit changes and the re-index brings it up to date."""
    runner = CliRunner()
    workspace = tmp_path / "ws"
    folder = tmp_path / "frob"
    folder.mkdir()
    (folder / "guide.md").write_text(GUIDE)  # ~1.1 KB
    (folder / "note.md").write_text("# Note\n\nA widget is frobnicated by its crank.\n")
    strict = tmp_path / "strict.yaml"
    strict.write_text("corpus:\n  max_document_mb: 0.001\n")  # 1,048 bytes: guide.md is past it

    def cli_run(*args: str, config: Path | None = None) -> str:
        options = ["--workspace", str(workspace)] + (["--config", str(config)] if config else [])
        result = runner.invoke(cli, [*options, *args])
        assert result.exit_code == 0, result.output
        return result.output

    def outdate(where: str = "") -> None:
        with closing(sqlite3.connect(workspace / "corpus.sqlite")) as db, db:
            db.execute(f"UPDATE document_derivation SET stamp = 'passages=1' {where}")

    assert "2 added" in cli_run("corpus", "add", str(folder))
    outdate()
    assert "2 document(s) were indexed by an older version" in cli_run("corpus", "list")

    added = cli_run("corpus", "add", str(folder), config=strict)
    assert "1 re-indexed" in added and "guide.md: the file passes" in added
    unread = cli_run("corpus", "list", config=strict)
    assert (
        "frob: 1 document(s) were indexed by an older version of the workbench and could not be "
        "read again (guide.md: the file passes corpus.max_document_mb (" in unread
    )
    assert "re-indexing alone will not update them" in unread
    assert "run workbench corpus add" not in unread

    outdate("WHERE source_id = 'frob/note'")  # one readable, one not
    both = cli_run("corpus", "list", config=strict)
    assert (
        "2 document(s) were indexed by an older version of the workbench and keep their old "
        f"passages until re-indexed: run workbench corpus add {folder}" in both
    )
    assert "--name frob; 1 of them could not be read again (guide.md:" in both

    assert "2 re-indexed" in cli_run("corpus", "add", str(folder))  # today's default limit
    assert "older version" not in cli_run("corpus", "list")
    with Corpus(workspace / "corpus.sqlite") as corpus:
        assert corpus.outdated() == []
        assert corpus._db.execute("SELECT COUNT(*) FROM document_unreadable").fetchone()[0] == 0


def test_the_notice_quotes_a_long_reason_bounded() -> None:
    outdated = OutdatedCollection(
        name="frob", root="/f", documents=1, unreadable=1, reason="x" * (REASON_CHARACTERS * 5)
    )
    quoted = outdated.notice().split("read again (", 1)[1].split("): they keep", 1)[0]
    assert len(quoted) == REASON_CHARACTERS and quoted.endswith("…")
