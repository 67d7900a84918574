"""Reading one YAML file with errors a person can act on (the router's config and
fault scripts both load YAML this way).

Hand-written limits, because PyYAML has none: a file larger than ``MAX_BYTES`` or
nested deeper than ``MAX_DEPTH`` is refused with one line before it is built —
PyYAML builds nested collections recursively, so a few hundred levels end in a
``RecursionError`` deep inside it. The depth is measured on PyYAML's event
stream, which is produced without recursion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 1_000_000
MAX_DEPTH = 50


def _too_deep(text: str) -> tuple[int, int] | None:
    """Where (line, column, from 1) the document first nests deeper than ``MAX_DEPTH``, or ``None``."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            mark = event.start_mark
            if depth > MAX_DEPTH:
                return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return None


def check_yaml_text(text: str, name: str, error: type[Exception]) -> None:
    """Refuse ``text`` with one ``error`` line when it is too large or nested too deep.

    For every reader of user YAML (the app's config parser calls it before its own loader).
    Syntax errors are left to the loader, which reports them with their line.
    """
    if len(text) > MAX_BYTES:
        raise error(
            f"{name}: the file is {len(text):,} characters; the limit is {MAX_BYTES:,} — "
            "a config or script this large is a mistake: point to the right file"
        )
    try:
        where = _too_deep(text)
    except yaml.YAMLError:
        return
    if where is not None:
        raise error(
            f"{name}:{where[0]}:{where[1]}: nested more than {MAX_DEPTH} levels "
            "deep — flatten the file"
        )


def read_yaml_file(path: Path, name: str, error: type[Exception], missing_hint: str) -> Any:
    """The parsed document at ``path``; every failure is ``error`` with one line naming ``name``."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise error(
                f"{name}: the file is {size:,} bytes; the limit is {MAX_BYTES:,} — "
                "a config or script this large is a mistake: point to the right file"
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{name}: file not found — {missing_hint}") from None
    except IsADirectoryError:
        raise error(f"{name}: is a directory, not a file — {missing_hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(
            f"{name}: cannot read the file ({type(exc).__name__}) — check its permissions and encoding"
        ) from None
    check_yaml_text(text, name, error)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        problem_mark = getattr(exc, "problem_mark", None)
        where = (
            f":{problem_mark.line + 1}:{problem_mark.column + 1}"
            if problem_mark is not None
            else ""
        )
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise error(f"{name}{where}: YAML syntax error: {problem} — fix the syntax") from None
