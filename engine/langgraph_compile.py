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
* **No static edges but START's**: a node ends with a ``Command`` that goes to
  the steps it made ready. After a step settles, the steps that may follow it —
  its dependents, the steps its route reset (a loop's target, a detour's target
  or return), the steps that waited for a loop's last pass — are checked with
  the runner's readiness; those that must be skipped or failed upstream are
  settled on the spot (and what follows *them* is checked in turn), those that
  can run are the next superstep. The first node, after START, dispatches every
  step that is ready. (A conditional edge per node would need its destinations
  listed, or LangGraph assumes every node: the graph would be quadratic in the
  workflow's size, 10^8 entries for 10,000 steps.)

A superstep is therefore every step made ready by the previous one, run
concurrently; LangGraph checkpoints after each. Dependencies are the runner's,
not static edges, so a loop body with dependents outside it, a detour target
with dependencies of its own, and overlapping loops need no special shape.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, TypedDict, cast

from langgraph.graph import START, StateGraph
from langgraph.types import Command


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


NodeFunction = Callable[[GraphState], Awaitable[Command[str]]]
"""A node: its state update, and the nodes to run next (``goto``)."""


def build_state_graph(
    step_ids: Sequence[str], node_for: Callable[[str], NodeFunction], start: NodeFunction
) -> StateGraph[Any, Any, Any, Any]:
    """The ``StateGraph`` of a workflow: ``node_for(step)`` runs a step, ``start`` looks at
    every step when the graph starts; each goes to the steps it made ready."""
    builder: StateGraph[Any, Any, Any, Any] = StateGraph(GraphState)
    builder.add_node(START_NODE, cast(Any, start))
    builder.add_edge(START, START_NODE)
    for step_id in step_ids:
        builder.add_node(step_id, cast(Any, node_for(step_id)))
    return builder


START_NODE = "dispatch@start"
"""The node that dispatches the first superstep (a step id is an identifier, so ``@``
never clashes with one)."""
