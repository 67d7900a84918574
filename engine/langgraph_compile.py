"""Compiling a workflow graph into a LangGraph ``StateGraph`` (DESIGN §5).

The compiled graph is scheduling only; what a step *does* is the shared runner's
(engine/runner.py). The shape:

* **State** — per-step statuses, outputs and iterations and the routing choices,
  each a dict merged key by key by its reducer, so the parallel nodes of one
  superstep never overwrite each other; our own step-run counter; the reason
  the run stopped early, if it did.
* **One node per step**, always executed once its predecessors have: trigger
  rules, ``when`` and "not routed" are decided inside the node and written to
  state as a status. A skip is a status, never a missing edge, so every join
  fires.
* **Fan-in with list edges** — ``add_edge([a, b], c)`` is one barrier, so a join
  runs once whatever the branch lengths (separate edges would run it twice).
* **Conditional edges only where control flow goes back**: a step whose routing
  can loop or detour, and a detour target that returns. Such a step gets an
  *exit node* (``<id>@exit``): its conditional edge goes back (to the loop
  target, the detour target, the declaring step) while it is not done, and to
  its exit node when it is; its dependents hang off the exit node, so they run
  once, after the last pass.
* **Loop bodies** — when a loop goes back, its body runs again from the loop
  target, but a body step's predecessors *outside* the body do not run again,
  so their barrier slots would never fill. Each such edge goes through a *gate
  node* (``<outside>><inside>``): on the first pass the gate passes as soon as
  the outside step is done (the same order as the plain edge), and the loop's
  conditional edge opens every gate of its body when it goes back. Nothing
  waits for a step it does not depend on.

Node names: a step id is an identifier, so ``@`` and ``>`` never clash with one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph

from engine.graph import WorkflowGraph

EXIT_SUFFIX = "@exit"
GATE_SEPARATOR = ">"


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """The dict-merge reducer: the right side's keys win."""
    return {**(left or {}), **(right or {})}


def highest(left: int | None, right: int | None) -> int:
    return max(left or 0, right or 0)


def first_reason(left: str | None, right: str | None) -> str:
    """Why the run stopped early; the first reason recorded stays."""
    return left or right or ""


class GraphState(TypedDict, total=False):
    statuses: Annotated[dict[str, str], merge]
    outputs: Annotated[dict[str, dict[str, Any]], merge]
    iterations: Annotated[dict[str, int], merge]
    routes: Annotated[dict[str, dict[str, Any]], merge]
    """Per step, its last routing choice (``decision``, ``target``, ``route``)."""
    goto: Annotated[dict[str, list[str]], merge]
    """Per step with a conditional edge: the steps it sends control back to, or []."""
    step_runs: Annotated[int, highest]
    stop: Annotated[str, first_reason]
    """Set when a limit or a terminate decision stopped the run: nodes settle nothing more."""


NodeFunction = Callable[[GraphState], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class SchedulingPlan:
    """Which node waits for which: the compiled graph's edges, before LangGraph."""

    predecessors: dict[str, list[str]]
    """Per step node, the nodes (steps, exit nodes, gates) whose completion triggers it."""
    conditional: list[str]
    """Steps with a conditional edge and an exit node."""
    back_targets: dict[str, list[str]]
    """Per conditional step, every step its conditional edge may send control back to."""
    gates: dict[str, str]
    """Gate node -> the node it waits for on the first pass."""
    loop_gates: dict[str, list[str]]
    """Per loop router, the gates its loop opens when it goes back."""

    def step_of(self, node: str) -> str:
        """The step a node stands for (an exit node or gate stands for its source step)."""
        return node.split(GATE_SEPARATOR, 1)[0].removesuffix(EXIT_SUFFIX)


def plan(graph: WorkflowGraph) -> SchedulingPlan:
    wf = graph.workflow
    order = graph.topological_order()
    back_targets: dict[str, list[str]] = {}
    for spec in wf.steps:
        routing = spec.routing
        if routing is None:
            continue
        targets = [
            t
            for t in (
                routing.loop.target if routing.loop else None,
                routing.detour.target if routing.detour else None,
            )
            if t
        ]
        if targets:
            back_targets.setdefault(spec.id, []).extend(targets)
    for edge in graph.detour_edges:
        back_targets.setdefault(edge.source, []).append(edge.target)
    conditional = [s for s in order if s in back_targets]
    exits = set(conditional)

    def source(step_id: str) -> str:
        return f"{step_id}{EXIT_SUFFIX}" if step_id in exits else step_id

    predecessors: dict[str, list[str]] = {
        s: [source(p) for p in graph.dependencies(s)] for s in order
    }
    gates: dict[str, str] = {}
    loop_gates: dict[str, list[str]] = {}
    for edge in graph.loop_edges:
        body = set(graph.between(edge.target, edge.source))
        opened = loop_gates.setdefault(edge.source, [])
        for step_id in order:
            if step_id not in body or step_id == edge.target:
                continue
            for dependency in graph.dependencies(step_id):
                if dependency in body:
                    continue
                gate = f"{dependency}{GATE_SEPARATOR}{step_id}"
                gates[gate] = source(dependency)
                predecessors[step_id] = [
                    gate if p == source(dependency) else p for p in predecessors[step_id]
                ]
                if gate not in opened:
                    opened.append(gate)
    return SchedulingPlan(
        predecessors=predecessors,
        conditional=conditional,
        back_targets={s: list(dict.fromkeys(back_targets[s])) for s in conditional},
        gates=gates,
        loop_gates=loop_gates,
    )


def build_state_graph(
    scheduling: SchedulingPlan,
    node_for: Callable[[str], NodeFunction],
    route_for: Callable[[str], Callable[[GraphState], Sequence[Hashable]]],
) -> StateGraph:
    """The ``StateGraph`` of a plan: ``node_for(step)`` runs a step, ``route_for(step)``
    chooses where a conditional step sends control (its exit node when done)."""
    builder: StateGraph = StateGraph(GraphState)
    for step_id in scheduling.predecessors:
        builder.add_node(step_id, node_for(step_id))
    for step_id in scheduling.conditional:
        builder.add_node(f"{step_id}{EXIT_SUFFIX}", _pass_node)
    for gate, waits_for in scheduling.gates.items():
        builder.add_node(gate, _pass_node)
        builder.add_edge(waits_for, gate)
    for step_id, preds in scheduling.predecessors.items():
        if not preds:
            builder.add_edge(START, step_id)
        elif len(preds) == 1:
            builder.add_edge(preds[0], step_id)
        else:
            builder.add_edge(list(preds), step_id)
    for step_id in scheduling.conditional:
        exit_node = f"{step_id}{EXIT_SUFFIX}"
        destinations = [
            *scheduling.back_targets[step_id],
            *scheduling.loop_gates.get(step_id, []),
            exit_node,
            END,
        ]
        builder.add_conditional_edges(step_id, route_for(step_id), destinations)
    return builder


async def _pass_node(state: GraphState) -> dict[str, Any]:
    """An exit node (a conditional step is done for good) or a gate: it only passes control on."""
    return {}
