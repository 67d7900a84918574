"""The default corpus: documentation already on the machine, so the first run needs no download.

Two sources, both read as text: the Python installation's documentation
topics (``pydoc_data.topics``, the language reference pydoc shows) and the
docstrings of the standard library's own sources, read with :mod:`ast` —
never by importing a module, which would run its code. Both are reference
material (kind ``reference``), so recency is not required of them (ADR-007 §5.4).
The build is lazy (first use) and takes a few seconds.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
import sysconfig
from collections.abc import Callable, Iterator
from functools import cache, partial
from pathlib import Path

from plumbing.memo_files import read_memo, write_memo
from research.corpus import Corpus, IndexReport
from research.loaders import LoadedDocument

DEFAULT_COLLECTION = "python-docs"
DOCSTRINGS_MEMO = "stdlib-docstrings.sqlite"
MAX_DOCSTRINGS = 20_000
"""Module texts the memo keeps: the standard libraries of several Python installations."""
UNREADABLE = b"\0"
"""What the memo keeps for a file that cannot be parsed (no text is a lone NUL)."""

_SKIP_DIRS = frozenset(
    {
        "test",
        "tests",
        "idlelib",
        "lib2to3",
        "site-packages",
        "dist-packages",
        "ensurepip",
        "turtledemo",
        "__pycache__",
        "config-3",
        "venv",
        "pydoc_data",
        "__phello__",
    }
)


Candidate = tuple[str, str, LoadedDocument] | None
"""One source read: (relative id, uri, document), or None when it holds too little to index."""


def _topic_sources() -> list[Callable[[], Candidate]]:
    try:
        from pydoc_data.topics import topics
    except ImportError:
        return []

    def read(name: str) -> Candidate:
        text = topics[name].strip()
        if not text:
            return None
        return (
            f"topics/{name}",
            f"pydoc:topics/{name}",
            LoadedDocument(
                title=f"Python reference: {name}", text=text, status="Final", kind="reference"
            ),
        )

    return [partial(read, name) for name in sorted(topics)]


def _docstring_text(tree: ast.Module) -> str:
    parts: list[str] = []
    module_doc = ast.get_docstring(tree)
    if module_doc:
        parts.append(module_doc)
    for node in tree.body:
        if isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ) and not node.name.startswith("_"):
            doc = ast.get_docstring(node)
            if doc:
                parts.append(f"{node.name}\n{'-' * len(node.name)}\n\n{doc}")
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(
                        member, (ast.FunctionDef, ast.AsyncFunctionDef)
                    ) and not member.name.startswith("_"):
                        member_doc = ast.get_docstring(member)
                        if member_doc:
                            parts.append(f"{node.name}.{member.name}: {member_doc}")
    return "\n\n".join(parts)


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


class _RememberedDocstrings:
    """The docstring texts of the listed standard-library files, remembered on the machine
    (a memo file, plumbing/memo_files.py): parsing every module costs ~3 CPU-s, paid in every
    new workspace for the same installed files. A file's key is the hash of the extraction's
    own source code (so a change to it never reads an old text), the file's path, size and
    modification time; the texts parsed during a build are remembered by its last source."""

    def __init__(self, paths: list[Path]) -> None:
        self._keys = {path: _file_key(path) for path in paths}
        self._known = read_memo(DOCSTRINGS_MEMO, [k for k in self._keys.values() if k])
        self._parsed: list[tuple[bytes, bytes]] = []

    def text(self, path: Path) -> str | None:
        """The file's docstring text (None: it cannot be read or parsed)."""
        key = self._keys.get(path)
        if key is not None and key in self._known:
            remembered = self._known[key]
            return remembered.decode("utf-8", "surrogatepass") if remembered != UNREADABLE else None
        try:
            text: str | None = _docstring_text(ast.parse(path.read_bytes(), filename=str(path)))
        except (SyntaxError, ValueError, OSError):
            text = None
        if key is not None:
            kept = UNREADABLE if text is None else text.encode("utf-8", "surrogatepass")
            self._parsed.append((key, kept))  # a docstring may spell a lone surrogate
        return text

    def remember(self) -> Candidate:
        """Remember the texts parsed so far; the last source of the list (it indexes nothing)."""
        write_memo(DOCSTRINGS_MEMO, self._parsed, MAX_DOCSTRINGS)
        self._parsed = []
        return None


def _file_key(path: Path) -> bytes | None:
    version = _extraction_version()
    try:
        stat = path.stat()
    except OSError:
        return None
    if not version:
        return None
    return hashlib.sha256(
        f"{version}\0{path}\0{stat.st_size}\0{stat.st_mtime_ns}".encode("utf-8", "surrogatepass")
    ).digest()


@cache
def _extraction_version() -> str:
    """The hash of the code that turns a module into its text: a change to it is a new key
    ("" when the code's source cannot be read: then nothing is remembered)."""
    try:
        return hashlib.sha256(inspect.getsource(_docstring_text).encode()).hexdigest()
    except (OSError, TypeError):
        return ""


def _stdlib_sources(root: Path) -> list[Callable[[], Candidate]]:
    listed: list[tuple[Path, Path]] = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if any(part in _SKIP_DIRS or part.startswith("config-") for part in relative.parts[:-1]):
            continue
        if relative.name.startswith("test_") or relative.name.startswith("_"):
            if relative.name != "__init__.py":
                continue
        listed.append((path, relative))
    remembered = _RememberedDocstrings([path for path, _ in listed])
    sources: list[Callable[[], Candidate]] = [
        partial(_stdlib_document, path, relative, remembered) for path, relative in listed
    ]
    return [*sources, remembered.remember]


def _stdlib_document(path: Path, relative: Path, remembered: _RememberedDocstrings) -> Candidate:
    text = remembered.text(path)
    if text is None or len(text) < 200:
        return None
    module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
    return (
        f"stdlib/{module}",
        path.as_uri(),
        LoadedDocument(
            title=f"Python standard library: {module}",
            text=text,
            status="Final",
            kind="reference",
        ),
    )


def default_sources(stdlib: Path | None = None) -> list[Callable[[], Candidate]]:
    """The default collection's sources, listed (cheap) but not read yet."""
    return _topic_sources() + _stdlib_sources(stdlib or stdlib_root())


def build_default_corpus(
    corpus: Corpus,
    stdlib: Path | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    sources: list[Callable[[], Candidate]] | None = None,
) -> IndexReport:
    """Index the default collection into ``corpus`` (incremental: unchanged documents are skipped);
    ``on_progress(done, total)`` after each source read (``sources``: already listed)."""
    listed = sources if sources is not None else default_sources(stdlib)

    def documents() -> Iterator[tuple[str, str, LoadedDocument]]:
        for done, read in enumerate(listed, 1):
            document = read()
            if document is not None:
                yield document
            if on_progress is not None:
                on_progress(done, len(listed))

    return corpus.add_documents(
        DEFAULT_COLLECTION, f"python {sys.version.split()[0]} docs", documents()
    )


def ensure_default_corpus(
    corpus: Corpus, on_progress: Callable[[int, int], None] | None = None
) -> IndexReport | None:
    """Build the default collection the first time it is needed; None when it already exists.

    Concurrent first use builds it once: the check is repeated under the corpus's writer
    lock, so a process that waited for another's build finds it done and reuses it.
    ``on_progress(done, total)`` is called once the sources are listed (before waiting for
    that lock) and after each source read.
    """

    def ready() -> bool:
        return corpus.has_collection(DEFAULT_COLLECTION) and not corpus.needs_reindex(
            DEFAULT_COLLECTION
        )

    if ready():
        return None
    sources = default_sources()
    if on_progress is not None:
        on_progress(0, len(sources))
    with corpus.exclusive():
        if ready():
            return None
        return build_default_corpus(corpus, on_progress=on_progress, sources=sources)


def outdated_notices(corpus: Corpus) -> list[str]:
    """One line for each collection holding documents indexed by an older version of the
    workbench, and what brings it up to date (:meth:`Corpus.outdated`). The default collection
    is left out: it is brought up to date on its own the next time it is used."""
    return [c.notice() for c in corpus.outdated() if c.name != DEFAULT_COLLECTION]
