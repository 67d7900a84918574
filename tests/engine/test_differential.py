"""Differential testing: Kahn, LangGraph and the reference interpreter agree on every
generated valid workflow (tests/engine/reference/).

They agree on the run status and, per step, its final status, iteration, run
count and outputs; the two engines also give the same canonical run (their own
events per step, route decisions, dependency order). A run stopped by a limit
is compared on its status alone: which steps got the last runs before the bound
depends on the order of starts, which a wavefront scheduler is free to vary.

``DIFFERENTIAL_EXAMPLES`` sets the number of generated workflows (``make fuzz``
runs many more than CI).
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.engine.reference.differential import run_all
from tests.engine.reference.generator import load, workflows

EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "2000" if os.environ.get("CI") else "300"))
"""CI: 2000 workflows, about 75 s of one core (some 38 ms each, LangGraph's run half of it)."""
TIMEOUT_S = max(600, EXAMPLES // 2)
INPUTS = {"n": 3, "xs": [4, 5, 6]}


def check(data: dict[str, Any]) -> None:
    wf = load(data)
    found = run_all(wf, INPUTS)
    reference, kahn, graph = found["reference"], found["kahn"], found["langgraph"]
    shown = json.dumps(data)
    assert found["order_violations"] == [], shown
    for outcome in (kahn, graph):
        assert all(state[0] not in ("PENDING", "RUNNING") for state in outcome.steps.values())
    if reference.limited or kahn.limited or graph.limited:
        assert reference.status == kahn.status == graph.status == "PARTIAL", shown
        return
    assert kahn.comparable() == reference.comparable(), shown
    assert graph.comparable() == reference.comparable(), shown
    assert found["canonical"] == [], shown


@pytest.mark.timeout(TIMEOUT_S)
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(workflows())
def test_the_engines_and_the_reference_agree_on_generated_workflows(data: dict[str, Any]) -> None:
    check(data)
