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

import asyncio
import json
import os
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.events import StepStarted
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.protocol import RunContext
from engine.store import InMemoryRunStore
from tests.engine.kahn_helpers import TEST_REGISTRY
from tests.engine.reference.differential import respond, run_all
from tests.engine.reference.generator import load, workflows

EXAMPLES = int(os.environ.get("DIFFERENTIAL_EXAMPLES", "1800" if os.environ.get("CI") else "300"))
"""CI: 1800 workflows, about 70 s of one core (some 38 ms each, LangGraph's run half of
it), plus 150 forks (about 10 s)."""
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


# -- time travel: a fork with no edits reproduces the run it forks ---------------------------

FORK_EXAMPLES = max(20, EXAMPLES // 12)


@pytest.mark.timeout(TIMEOUT_S)
@settings(
    max_examples=FORK_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)
@given(workflows(), st.randoms(use_true_random=False))
def test_a_fork_at_any_pass_without_edits_ends_as_the_run_it_forks(
    data: dict[str, Any], rng: random.Random
) -> None:
    """Steps are deterministic, so going back to any pass of any step and running on must
    end exactly where the parent ended: statuses, iterations, outputs and run counts."""
    wf = load(data)
    store = InMemoryRunStore()

    async def go() -> None:
        parent = await KahnEngine(registry=TEST_REGISTRY).execute(
            wf, RunContext(store=store, responder=respond)
        )
        if "reached" in parent.reason:
            return  # which steps got the last runs before a limit is not deterministic
        passes = sorted(
            {
                (e.step_id, e.iteration)
                for e in store.events(parent.run_id)
                if isinstance(e, StepStarted) and e.attempt == 1
            }
        )
        if not passes:
            return
        step_id, iteration = rng.choice(passes)
        at = f"{step_id}@{iteration}"
        expected = _final(store, parent.run_id)
        for engine in (KahnEngine, LangGraphEngine):
            fork = await engine(registry=TEST_REGISTRY).fork(
                parent.run_id, at, RunContext(store=store, responder=respond)
            )
            assert fork.status == parent.status, (at, json.dumps(data))
            assert _final(store, fork.run_id) == expected, (engine.name, at, json.dumps(data))

    asyncio.run(go())


def _final(store: InMemoryRunStore, run_id: str) -> dict[str, Any]:
    return {
        step_id: (r.status.value, r.iteration, r.runs, r.outputs)
        for step_id, r in store.step_results(run_id).items()
    }
