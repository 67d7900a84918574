"""The bounds a corpus document is read within, and whether symlinks out of its folder are followed.

Every document is hostile until read (a 165 MB one-line file, a PDF bomb, a symlink to
``~/.ssh``); a document past a bound is skipped with its reason, the rest of the folder indexes.
The defaults fit real documents many times over: the longest PEP is ~0.2 MiB, a long book as
text ~5 MiB.
"""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class CorpusLimits:
    max_document_bytes: int = 32 * MIB
    """The largest file read, and the most text one document may give (UTF-8 bytes)."""
    max_pdf_pages: int = 5000
    """The most pages of a PDF read."""
    max_pdf_content_bytes: int = 32 * MIB
    """The most page content (drawing instructions, once inflated) a PDF's pages may hold in all:
    a PDF whose pages share one huge content stream is parsed once per page, and that work is
    what this bounds. pypdf extracts text at ~0.5 MiB of content a second, so the default costs a
    minute at most; a 1,000-page book holds ~10-30 MiB."""
    follow_symlinks: bool = False
    """Whether a symlink whose target lies outside the folder is followed (else skipped, listed)."""

    def too_large(self, name: str, what: str) -> str:
        """The reason a document is skipped when ``what`` (``the file``, ``its text``) passes the
        size bound."""
        return (
            f"{name}: {what} passes corpus.max_document_mb ({self.max_document_bytes / MIB:g} MiB);"
            " split it, or raise the bound in the config"
        )


DEFAULT_LIMITS = CorpusLimits()
