"""The run queue's PostgreSQL schema — procrastinate's tables, which tui/worker/queue.py and
the workers use — as Alembic revisions (chain ``queue``); applied by ``workbench db upgrade``
beside the other chains (tui/launch/stores.py)."""

from pathlib import Path

CHAIN = Path(__file__).parent
