"""Reading one YAML file with errors a person can act on (the router's config and
fault scripts both load YAML this way)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def read_yaml_file(path: Path, name: str, error: type[Exception], missing_hint: str) -> Any:
    """The parsed document at ``path``; every failure is ``error`` with one line naming ``name``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{name}: file not found — {missing_hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(
            f"{name}: cannot read the file ({type(exc).__name__}) — check its permissions and encoding"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise error(f"{name}{where}: YAML syntax error: {problem} — fix the syntax") from None
