"""Every engine test starts with no workflow graph kept from an earlier one.

engine/graph.py keeps the graphs of the last few definitions a process used, and what is
built once per graph with them (the ``run_started`` lists, the readiness tables). A
definition a test module builds once and several tests run would otherwise reuse what an
earlier test built — and mutation testing's forked children what the run before the mutant
built, so a mutant there would never run.
"""

from __future__ import annotations

import pytest

import engine.graph


@pytest.fixture(autouse=True)
def _no_kept_graphs() -> None:
    engine.graph._KEPT.clear()
