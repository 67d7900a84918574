"""Workflow definitions shipped with the product (YAML files in this package)."""

from __future__ import annotations

from pathlib import Path

WORKFLOWS_DIR = Path(__file__).resolve().parent


def shipped_workflows() -> list[Path]:
    """Every workflow file shipped in this package, sorted by name."""
    return sorted(WORKFLOWS_DIR.glob("*.yaml"))
