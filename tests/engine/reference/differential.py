"""Running one workflow on the Kahn engine, the LangGraph engine and the reference,
reduced to what the three must agree on."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from engine.canonical import compare
from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised, RouteDecided
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.lifecycle import EngineBase
from engine.protocol import RunContext
from engine.spec import WorkflowDefinition
from engine.store import InMemoryRunStore
from tests.engine.kahn_helpers import TEST_REGISTRY
from tests.engine.langgraph_cases import canonical_of
from tests.engine.reference.interpreter import interpret

StepState = tuple[str, int, int, dict[str, Any]]
"""(status, iteration, runs, outputs) of one step at the end of a run."""


@dataclass(frozen=True)
class Outcome:
    status: str
    steps: dict[str, StepState]
    limited: bool = False
    """The run stopped at a limit: which steps got the last runs is not compared."""
    detours_met: bool = False
    """A detour was rejected because another step's detour was active: which of the two
    was taken depends on which declaring step settled first, not compared either."""

    @property
    def order_dependent(self) -> bool:
        """The outcome depends on the order in which concurrent steps started or settled,
        which the design leaves to the scheduler (DESIGN §5, shadow mode)."""
        return self.limited or self.detours_met

    def comparable(self) -> Any:
        if self.limited:
            return self.status
        return self.status, self.steps


async def respond(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    """The automatic answer the reference assumes (interpreter.answer_for)."""
    spec_prompt = request.prompt
    action = "reject" if "reject" in spec_prompt else "approve"
    return InterruptAnswer(action=action, automatic=True)


async def _engine_run(
    engine: EngineBase, wf: WorkflowDefinition, store: InMemoryRunStore
) -> tuple[Outcome, Any]:
    result = await engine.execute(wf, RunContext(store=store, inputs={}, responder=respond))
    results = store.step_results(result.run_id)
    steps = {
        step_id: (r.status.value, r.iteration, r.runs, dict(r.outputs))
        for step_id, r in results.items()
    }
    limited = result.status.value == "PARTIAL" and "reached" in result.reason
    canonical = canonical_of(wf, store, result.run_id)
    return Outcome(
        result.status.value, steps, limited, _detours_met(store, result.run_id)
    ), canonical


def _detours_met(store: InMemoryRunStore, run_id: str) -> bool:
    """A step chose a detour and fell back to its default edge because another step's
    detour was active. A rejection that returns (``return_to``) is a nested attempt inside
    the active detour, decided by the graph alone; the other default-edge rejection, a
    target waiting on its declarer, the loader refuses, so generated workflows never hit it."""
    return any(
        isinstance(event, RouteDecided)
        and event.signal.route == "detour_rejected"
        and event.signal.return_to is None
        for event in store.events(run_id)
    )


def run_all(wf: WorkflowDefinition, inputs: dict[str, Any]) -> dict[str, Any]:
    """{"reference": Outcome, "kahn": Outcome, "langgraph": Outcome, "canonical": differences}."""

    async def go() -> tuple[tuple[Outcome, Any], tuple[Outcome, Any]]:
        store = InMemoryRunStore()
        kahn = await _engine_run(KahnEngine(registry=TEST_REGISTRY), wf, store)
        graph = await _engine_run(LangGraphEngine(registry=TEST_REGISTRY), wf, store)
        return kahn, graph

    (kahn, kahn_canonical), (graph, graph_canonical) = asyncio.run(go())
    reference = interpret(wf, inputs)
    ref = Outcome(
        reference.status,
        {i: (s.status, s.iteration, s.runs, dict(s.outputs)) for i, s in reference.steps.items()},
        reference.stopped_by_limit,
        reference.detours_met,
    )
    return {
        "reference": ref,
        "kahn": kahn,
        "langgraph": graph,
        "canonical": compare(kahn_canonical, graph_canonical),
        "order_violations": kahn_canonical.order_violations + graph_canonical.order_violations,
    }


def final_steps(store: InMemoryRunStore, run_id: str) -> dict[str, StepState]:
    return {
        step_id: (r.status.value, r.iteration, r.runs, dict(r.outputs))
        for step_id, r in store.step_results(run_id).items()
    }


async def fork_differences(
    store: InMemoryRunStore, parent_id: str, at: str
) -> dict[str, list[tuple[str, Any, Any]]]:
    """Fork ``parent_id`` at ``at`` without edits on each engine: per engine, what differs
    from the parent — ("status" | "reason" | step id, parent's, fork's)."""
    parent = store.get_run(parent_id)
    expected = final_steps(store, parent_id)
    found: dict[str, list[tuple[str, Any, Any]]] = {}
    for engine in (KahnEngine(registry=TEST_REGISTRY), LangGraphEngine(registry=TEST_REGISTRY)):
        fork = await engine.fork(parent_id, at, RunContext(store=store, responder=respond))
        got = final_steps(store, fork.run_id)
        differences = [
            (step_id, expected[step_id], got[step_id])
            for step_id in expected
            if got[step_id] != expected[step_id]
        ]
        if fork.status != parent.status:
            differences.append(("status", parent.status.value, fork.status.value))
        if fork.reason != parent.reason:
            differences.append(("reason", parent.reason, fork.reason))
        found[engine.name] = differences
    return found
