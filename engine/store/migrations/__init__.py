"""The run store's PostgreSQL schema as Alembic revisions (chain ``runs``); applied by
``workbench db upgrade`` (plumbing/migrations.py)."""

from pathlib import Path

CHAIN = Path(__file__).parent
