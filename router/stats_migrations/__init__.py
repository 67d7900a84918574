"""The provider statistics' PostgreSQL schema as Alembic revisions (chain ``router``); applied
by ``workbench db upgrade`` (plumbing/migrations.py)."""

from pathlib import Path

CHAIN = Path(__file__).parent
