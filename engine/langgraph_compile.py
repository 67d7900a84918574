"""Compiling a workflow into a LangGraph ``StateGraph`` (DESIGN §5).

The compiled graph is scheduling only; what a step *does* is the shared runner's
(engine/runner.py), and *whether* a step may start is the runner's readiness —
the same rules the Kahn engine follows. The shape:

* **State** — per-step statuses, outputs and iterations and the routing choices,
  each a dict merged key by key by its reducer, so the parallel nodes of one
  superstep never overwrite each other; our own step-run counter.
* **One node per step.** It runs its step when the step is PENDING and ready,
  and otherwise does nothing (a step dispatched twice in one superstep, or one
  whose dependency a loop of the same superstep has just reset, is not run
  twice or early).
* **One conditional edge per node, and one from START**, to the steps the node
  made ready: after a step settles, the steps that may follow it — its
  dependents, the steps its route reset (a loop's target, a detour's target or
  return), the steps that waited for a loop's last pass — are checked with the
  runner's readiness; those that must be skipped or failed upstream are settled
  on the spot (and what follows *them* is checked in turn), those that can run
  are the next superstep. START dispatches every step that is ready.

A superstep is therefore every step made ready by the previous one, run
concurrently; LangGraph checkpoints after each. Dependencies are the runner's,
not static edges, so a loop body with dependents outside it, a detour target
with dependencies of its own, and overlapping loops need no special shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Annotated, Any, TypedDict, cast

from langgraph.graph import END, START, StateGraph


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """The dict-merge reducer: the right side's keys win."""
    return {**(left or {}), **(right or {})}


def highest(left: int | None, right: int | None) -> int:
    return max(left or 0, right or 0)


class GraphState(TypedDict, total=False):
    statuses: Annotated[dict[str, str], merge]
    outputs: Annotated[dict[str, dict[str, Any]], merge]
    iterations: Annotated[dict[str, int], merge]
    routes: Annotated[dict[str, dict[str, Any]], merge]
    """Per step, its last routing choice (``decision``, ``target``, ``route``)."""
    step_runs: Annotated[int, highest]


NodeFunction = Callable[[GraphState], Awaitable[dict[str, Any]]]
EdgeFunction = Callable[[GraphState], Sequence[Hashable]]


def build_state_graph(
    step_ids: Sequence[str],
    node_for: Callable[[str], NodeFunction],
    start: NodeFunction,
    dispatched: Callable[[str], EdgeFunction],
) -> StateGraph[Any, Any, Any, Any]:
    """The ``StateGraph`` of a workflow: ``node_for(step)`` runs a step, ``start`` looks at
    every step when the graph starts; ``dispatched(node)`` is the node's conditional edge,
    to the steps it made ready (END when none). A node's edge is evaluated right after the
    node, in the same task, so the dispatcher can hand it over outside the graph state."""
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(GraphState)
    destinations: list[str] = [*step_ids, END]
    builder.add_node(START_NODE, cast(Any, start))
    builder.add_edge(START, START_NODE)
    builder.add_conditional_edges(START_NODE, dispatched(START_NODE), destinations)
    for step_id in step_ids:
        builder.add_node(step_id, cast(Any, node_for(step_id)))
        builder.add_conditional_edges(step_id, dispatched(step_id), destinations)
    return builder


START_NODE = "dispatch@start"
"""The node that dispatches the first superstep (a step id is an identifier, so ``@``
never clashes with one)."""
