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
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from research.corpus import Corpus, IndexReport
from research.loaders import LoadedDocument

DEFAULT_COLLECTION = "python-docs"

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


def _topic_documents() -> Iterator[tuple[str, str, LoadedDocument]]:
    try:
        from pydoc_data.topics import topics
    except ImportError:
        return
    for name in sorted(topics):
        text = topics[name].strip()
        if text:
            yield (
                f"topics/{name}",
                f"pydoc:topics/{name}",
                LoadedDocument(
                    title=f"Python reference: {name}", text=text, status="Final", kind="reference"
                ),
            )


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


def _stdlib_documents(root: Path) -> Iterator[tuple[str, str, LoadedDocument]]:
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if any(part in _SKIP_DIRS or part.startswith("config-") for part in relative.parts[:-1]):
            continue
        if relative.name.startswith("test_") or relative.name.startswith("_"):
            if relative.name != "__init__.py":
                continue
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError, OSError):
            continue
        text = _docstring_text(tree)
        if len(text) < 200:
            continue
        module = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
        yield (
            f"stdlib/{module}",
            path.as_uri(),
            LoadedDocument(
                title=f"Python standard library: {module}",
                text=text,
                status="Final",
                kind="reference",
            ),
        )


def build_default_corpus(corpus: Corpus, stdlib: Path | None = None) -> IndexReport:
    """Index the default collection into ``corpus`` (incremental: unchanged documents are skipped)."""
    root = stdlib or stdlib_root()

    def documents() -> Iterator[tuple[str, str, LoadedDocument]]:
        yield from _topic_documents()
        yield from _stdlib_documents(root)

    return corpus.add_documents(
        DEFAULT_COLLECTION, f"python {sys.version.split()[0]} docs", documents()
    )


def ensure_default_corpus(corpus: Corpus) -> IndexReport | None:
    """Build the default collection the first time it is needed; None when it already exists.

    Concurrent first use builds it once: the check is repeated under the corpus's writer
    lock, so a process that waited for another's build finds it done and reuses it.
    """

    def ready() -> bool:
        return corpus.has_collection(DEFAULT_COLLECTION) and not corpus.needs_reindex(
            DEFAULT_COLLECTION
        )

    if ready():
        return None
    with corpus.exclusive():
        if ready():
            return None
        return build_default_corpus(corpus)
