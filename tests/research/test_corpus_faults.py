"""The corpus under faults (issue 12): concurrent first use, symlink loops, a full disk, noisy PDFs.

Each runs the real ``workbench`` process (``python -m tui.cli``) where the issue names a command,
and checks one line on stderr, the documented exit code, and that what the corpus held survives.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from research.corpus import Corpus
from research.default_corpus import DEFAULT_COLLECTION
from research.loaders import load_document
from tests.cli.test_engine_cli import REPO, workbench
from tests.research.test_corpus import pdf_bytes

pytestmark = pytest.mark.timeout(600)

QUESTION_ARGS = (
    "--headless",
    "--on-interrupt",
    "default",
    "--max-rounds",
    "1",
    "--as-of",
    "2025-06-30",
    "--domain",
    "reference",
)


def _start(workspace: Path, *args: str) -> subprocess.Popen[str]:
    """``workbench`` started, not awaited (the helper in tests/cli waits; two must overlap here)."""
    env = {**os.environ, "COLUMNS": "250"}
    env.pop("WORKBENCH_HOME", None)
    return subprocess.Popen(
        [sys.executable, "-m", "tui.cli", "--workspace", str(workspace), *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def test_two_first_uses_of_an_empty_workspace_both_succeed(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    first = _start(workspace, "research", "context managers", *QUESTION_ARGS)
    second = _start(workspace, "research", "context managers", *QUESTION_ARGS)
    results = [p.communicate(timeout=540) for p in (first, second)]
    for process, (out, err) in zip((first, second), results):
        assert process.returncode == 0, err
        assert "Traceback" not in err and "database is locked" not in err
        assert "report:" in out
    with Corpus(workspace / "corpus.sqlite") as corpus:
        infos = [c for c in corpus.collections() if c.name == DEFAULT_COLLECTION]
        assert len(infos) == 1 and infos[0].documents > 0
        assert not corpus.needs_reindex(DEFAULT_COLLECTION)


def test_a_symlink_loop_is_one_line_and_broken_links_are_listed(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    added = workbench(tmp_path / "ws", "corpus", "add", str(loop))
    assert added.returncode == 2
    assert added.stderr.strip().splitlines() == [
        f"error: {loop}: a symlink loop; pass the real folder of md/rst/txt/html/pdf files"
    ]
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nWidgets are frobnicated in batches of seven.\n")
    (docs / "self.md").symlink_to(docs / "self.md")
    (docs / "gone.md").symlink_to(tmp_path / "nowhere.md")
    (docs / "up").symlink_to(docs)
    listed = workbench(tmp_path / "ws", "corpus", "add", str(docs))
    assert listed.returncode == 0, listed.stderr
    assert "docs: 1 added" in listed.stdout
    assert f"skipped {docs / 'self.md'}: a symlink loop; skipped" in listed.stdout
    assert f"skipped {docs / 'gone.md'}: a dangling symlink (its target is gone); skipped" in (
        listed.stdout
    )


def test_an_empty_question_is_refused_in_one_line(tmp_path: Path) -> None:
    for question in ("", "   "):
        refused = workbench(tmp_path / "ws", "research", question, "--headless")
        assert refused.returncode == 2
        assert refused.stderr.strip().splitlines() == [
            'error: the question is empty; ask something, e.g. workbench research "asyncio"'
        ]
    assert not (tmp_path / "ws" / "runs.sqlite").exists(), "nothing was started"


def test_pypdf_warnings_never_reach_stderr(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    good = pdf_bytes("Widgets are frobnicated in batches of seven")
    # A wrong startxref offset: pypdf recovers the document and logs a warning about it.
    damaged = good.replace(b"startxref\n", b"startxref\n9").replace(b"%%EOF", b"\n%%EOF")
    path = tmp_path / "paper.pdf"
    path.write_bytes(damaged)
    document = load_document(path, damaged)
    assert "frobnicated" in document.text
    assert capfd.readouterr().err == ""


def test_building_the_corpus_on_a_full_disk_is_one_line(tiny_disk: Path, tmp_path: Path) -> None:
    workspace = tiny_disk / "ws"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nWidgets are frobnicated in batches of seven.\n")
    added = workbench(workspace, "corpus", "add", str(docs))
    assert added.returncode == 0, added.stderr
    full = workbench(workspace, "corpus", "list")
    assert full.returncode == 2, full.stdout + full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in full.stderr, full.stderr
    assert str(workspace / "corpus.sqlite") in lines[0] and "the disk is full" in lines[0]
    assert "the corpus keeps what it held before" in lines[0]
    subprocess.run(["mount", "-o", "remount,size=64m", str(tiny_disk)], check=True)
    with Corpus(workspace / "corpus.sqlite") as corpus:
        assert corpus.search("frobnicated", collections=["docs"])
        assert corpus._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
