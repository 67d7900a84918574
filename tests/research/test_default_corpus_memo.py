"""The standard library's docstring texts remembered on the machine (research/default_corpus.py,
a memo file): a second build of the default corpus in a new workspace parses nothing it parsed
before and indexes the same documents; a changed file is parsed again; a file that cannot be
parsed is remembered as such."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from research.default_corpus import default_sources
from research.loaders import LoadedDocument

LONG = "It explains at length, past the two hundred characters a module needs to be kept. " * 3


@pytest.fixture
def stdlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small standard library, and a user cache dir of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "stdlib"
    (root / "pkg").mkdir(parents=True)
    (root / "widgets.py").write_text(f'"""Widgets. {LONG}"""\n')
    (root / "pkg" / "__init__.py").write_text(f'"""A package. {LONG}"""\n')
    (root / "broken.py").write_text("def (:\n")
    (root / "odd.py").write_text(f'"""A lone surrogate: \\udc80. {LONG}"""\n')
    return root


def _parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files ``ast.parse`` reads from now on."""
    seen: list[str] = []
    real = ast.parse

    def counted(
        source: bytes, filename: str = "<unknown>", *args: object, **kwargs: object
    ) -> ast.Module:
        if str(filename).endswith(".py"):
            seen.append(Path(filename).name)
        return real(source, filename, *args, **kwargs)  # type: ignore[arg-type,no-any-return]

    monkeypatch.setattr(ast, "parse", counted)
    return seen


def _stdlib_documents(root: Path) -> dict[str, LoadedDocument]:
    return {
        found[0]: found[2]
        for found in (read() for read in default_sources(root))
        if found is not None and found[0].startswith("stdlib/")
    }


def test_a_second_build_parses_nothing_it_parsed_before(
    stdlib: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed = _parsed(monkeypatch)
    first = _stdlib_documents(stdlib)
    assert set(first) == {"stdlib/widgets", "stdlib/pkg", "stdlib/odd"}
    assert first["stdlib/odd"].text.startswith("A lone surrogate")  # remembered, then read back
    assert sorted(parsed) == ["__init__.py", "broken.py", "odd.py", "widgets.py"]
    parsed.clear()
    assert _stdlib_documents(stdlib) == first  # the broken file is remembered as unreadable
    assert parsed == []


def test_a_changed_file_is_parsed_again(stdlib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _parsed(monkeypatch)
    _stdlib_documents(stdlib)
    widgets = stdlib / "widgets.py"
    widgets.write_text(f'"""Gadgets now. {LONG}"""\n')
    os.utime(widgets, ns=(1, 1))  # even at an old time: the size and time differ
    parsed.clear()
    again = _stdlib_documents(stdlib)
    assert parsed == ["widgets.py"]
    assert again["stdlib/widgets"].text.startswith("Gadgets now.")


def test_an_unusable_memo_still_builds_the_same_documents(
    stdlib: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _stdlib_documents(stdlib)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("not a folder")
    assert _stdlib_documents(stdlib) == first
