"""When a PENDING step may run: the readiness rules both engines schedule by (DESIGN §5).

A step waits until every dependency has settled, for the loops still to come that would run
again a step upstream of it without it (docs/workflows.md, "When a step runs"), and, behind a
detour target, until the detour's declarer has returned. Then it is
skipped when a termination cut it off or no router that could choose it did, else its
trigger rule decides: run, skip, or fail upstream. Everything a question reads is kept per
step when the run starts, so a question costs the step's own edges, never the workflow's
size; the engines ask it only of the steps a settled step may have made ready
(:meth:`ReadinessRules.followers`).
"""

from __future__ import annotations

from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from typing import Literal
from weakref import WeakKeyDictionary

from engine.graph import WorkflowGraph
from engine.run_state import RunState
from engine.states import SETTLED, StepStatus

FAILED = (StepStatus.FAILED, StepStatus.UPSTREAM_FAILED)


@dataclass(frozen=True)
class Readiness:
    action: Literal["wait", "run", "skip", "upstream_failed"]
    reason: str = ""


WAIT = Readiness("wait")
RUN = Readiness("run")
UPSTREAM_FAILED = Readiness("upstream_failed")
"""Its reason is given where the step is settled: the failed dependencies, by name."""


def trigger_readiness(rule: str, statuses: list[StepStatus]) -> Readiness:
    """Airflow's trigger rules over settled dependency statuses.

    Every rule is evaluated once all dependencies have settled (one_success and
    one_failed included): the outcome is the same as firing early, and the
    dependency order stays the canonical one both engines share.
    """
    if not statuses:
        return RUN
    if rule != "one_failed" and statuses.count(StepStatus.SUCCEEDED) == len(statuses):
        return RUN  # every rule but one_failed runs when every dependency succeeded
    succeeded = sum(s == StepStatus.SUCCEEDED for s in statuses)
    failed = sum(s in FAILED for s in statuses)
    if rule == "all_done":
        return RUN
    if rule == "one_failed":
        return RUN if failed else Readiness("skip", "no dependency failed (one_failed)")
    if rule == "one_success":
        if succeeded:
            return RUN
        if failed:
            return UPSTREAM_FAILED
        return Readiness("skip", "every dependency was skipped")
    if failed:
        return UPSTREAM_FAILED
    if rule == "all_success":  # none failed, not all succeeded: one was skipped
        return Readiness("skip", "a dependency was skipped (all_success)")
    if rule == "none_failed":
        return RUN
    return RUN if succeeded else Readiness("skip", "every dependency was skipped")


@dataclass(frozen=True)
class _Tables:
    """What readiness reads of the graph, per step: built once per graph (a graph is kept
    per definition, engine/graph.py), so a run's start does not build it again."""

    order: dict[str, int]
    dependencies: dict[str, tuple[str, ...]]
    routers: dict[str, tuple[str, ...]]
    loop_guards: dict[Detour, dict[str, list[str]]]
    """Per step, the loop routers it waits for while no detour is under way (key None); per
    detour that can be under way, only the steps for which that differs (:func:`_loop_guards`)."""
    followers: dict[str, tuple[str, ...]]


Detour = tuple[str, str] | None
"""A detour under way, (declaring step, target), or None."""


_TABLES: WeakKeyDictionary[WorkflowGraph, _Tables] = WeakKeyDictionary()


def _tables(graph: WorkflowGraph) -> _Tables:
    tables = _TABLES.get(graph)
    if tables is None:
        tables = _TABLES[graph] = _build_tables(graph)
    return tables


def _build_tables(graph: WorkflowGraph) -> _Tables:
    steps = [spec.id for spec in graph.workflow.steps]
    under_way = [(edge.target, edge.source) for edge in graph.detour_edges]
    loop_guards = _loop_guards(graph)
    guarded: dict[str, dict[str, None]] = {}  # per router, its waiting steps, once each
    for guards in loop_guards.values():
        for waiting, routers in guards.items():
            for router in routers:
                guarded.setdefault(router, {})[waiting] = None
    for detour in under_way:  # its start and its return change these steps' waits
        changed = loop_guards.get(detour, {})
        for end in detour:
            guarded.setdefault(end, {}).update(dict.fromkeys(changed))
    for target in steps:  # a returning declarer releases its detour target's dependents
        declarer = graph.detour_declarer(target)
        if declarer is not None:
            waiting_steps = [d for d in graph.dependents(target) if d != declarer]
            guarded.setdefault(declarer, {}).update(dict.fromkeys(waiting_steps))
    # tuples of text: the cycle collector stops tracking them, so a large workflow's
    # adjacency does not slow every collection down
    return _Tables(
        order={step_id: index for index, step_id in enumerate(graph.topological_order())},
        dependencies={s: tuple(graph.dependencies(s)) for s in steps},
        routers={s: tuple(graph.routers_of(s)) for s in steps},
        loop_guards=loop_guards,
        followers={s: (*graph.dependents(s), *guarded.get(s, ())) for s in steps},
    )


class ReadinessRules:
    """The readiness of one run's steps, over its state and its graph."""

    def __init__(self, state: RunState, graph: WorkflowGraph) -> None:
        self.state = state
        self.graph = graph
        tables = _tables(graph)
        self.order = tables.order
        """Each step's place in the topological order (:meth:`order_key`)."""
        self.dependencies = tables.dependencies
        """Per step, its forward dependencies."""
        self._routers = tables.routers
        self._loop_guards = tables.loop_guards
        self._followers = tables.followers

    def followers(self, step_id: str) -> tuple[str, ...]:
        """The steps whose readiness may change when ``step_id`` settles: its dependents,
        and, for a loop's router, the steps outside the loop that wait for its last pass. Their
        order is not read: both engines ask them in topological order (:meth:`order_key`)."""
        return self._followers[step_id]

    def order_key(self, step_id: str) -> int:
        return self.order[step_id]

    def blocked(self, step_id: str) -> bool:
        """Whether a forward dependency of the step has not settled: it waits, whatever else
        holds (the first thing :meth:`readiness` asks)."""
        steps = self.state.steps
        for dependency in self.dependencies[step_id]:
            if steps[dependency].status not in SETTLED:
                return True
        return False

    def readiness(self, step_id: str) -> Readiness:
        """Whether a PENDING step can run now, must be skipped or failed, or must wait."""
        state = self.state
        steps = state.steps
        detour = state.active_detour
        returning = state.returned_detours
        statuses: list[StepStatus] = []
        for dependency in self.dependencies[step_id]:
            status = steps[dependency].status
            if status not in SETTLED:
                return WAIT
            if detour is not None and dependency == detour.declared_by and step_id != detour.target:
                return WAIT
            if returning and self._awaits_return(step_id, dependency):
                return WAIT
            statuses.append(status)
        under_way = None if detour is None else (detour.declared_by, detour.target)
        for router in self._guards(under_way, step_id):
            if steps[router].status not in SETTLED:
                return WAIT
        record = steps[step_id]
        if state.stopped and step_id in state.stopped:
            return Readiness("skip", f"run stopped: {state.stopped[step_id]}")
        routers = self._routers[step_id]
        if routers:
            chose = [r for r in routers if steps[r].status == StepStatus.SUCCEEDED]
            if chose and record.routed_by.isdisjoint(chose):
                return Readiness("skip", f"not routed (by {', '.join(chose)})")
        return trigger_readiness(record.spec.trigger, statuses)

    def _guards(self, under_way: Detour, step_id: str) -> list[str]:
        """The loop routers ``step_id`` waits for while ``under_way`` is (or none is)."""
        changed = self._loop_guards.get(under_way) if under_way is not None else None
        if changed is not None and step_id in changed:
            return changed[step_id]
        return self._loop_guards.get(None, {}).get(step_id, [])

    def _awaits_return(self, step_id: str, dependency: str) -> bool:
        """Whether ``dependency`` is a detour target whose declarer is running again: what the
        target leads to waits for the declarer's return pass, whose decision (terminate, route)
        may cut it off — so no engine's timing decides whether it runs first."""
        declarer = self.graph.detour_declarer(dependency)
        return (
            declarer is not None
            and declarer != step_id
            and declarer in self.state.returned_detours
            and self.state.steps[declarer].status not in SETTLED
        )


def _reaches(graph: WorkflowGraph) -> list[tuple[str, set[str]]]:
    """Per loop, its router and every step one of its passes can run again: its body, and
    the body of each loop whose router that brings back (an inner loop counts afresh, so it
    may go back again) — and so on. A step outside that depending on a step in it waits for
    the router: overlapping loops (``b`` in the body of ``c``'s loop and router of a loop to
    ``a``) run ``a`` again after ``b``'s last pass."""
    bodies = {
        edge.source: set(graph.between(edge.target, edge.source)) for edge in graph.loop_edges
    }
    reaches = []
    for router, body in bodies.items():
        reach, todo = set(body), [r for r in body if r in bodies and r != router]
        while todo:
            inner = bodies[todo.pop()]
            todo.extend(r for r in inner - reach if r in bodies)
            reach |= inner
        reaches.append((router, reach))
    return reaches


def _loop_guards(graph: WorkflowGraph) -> dict[Detour, dict[str, list[str]]]:
    """Per step, the loop routers it waits for while a detour is under way (or none is):
    docs/workflows.md, "When a step runs". The table of no detour (key None) holds every
    step; a detour's holds only the steps whose routers differ from it.

    A step waits for every loop that would run again a step upstream of it without running
    it again, unless the loop's router already waits for it — through dependencies, the
    waits taken so far, and a declaring step's wait for its detour's target while the
    detour is under way. Waits are taken step by step in topological order, loop by loop in
    file order: so of two steps that would wait for each other's loop (two loops sharing
    body steps in parallel branches), the first waits and the other does not.

    Cost near-linear in the usual case, for these reasons. A wait for a router upstream of
    the step adds no path (one exists through dependencies): the search leaves those out.
    Waits are only taken where they close no cycle, so only a detour's wait (target ->
    declarer) can be on one: without a detour a router upstream of the step never waits
    for it, so only steps with other candidates are searched. With one, the step reaches
    an upstream router only through that wait: it must reach the target, and the declarer
    reach the router, so the step too — only such steps, and those with other candidates,
    can differ from the table of no detour, and only they are searched again.

    Steps with a candidate router not upstream of them (a step reading a loop's body from
    outside it) would each need a search of the whole graph, once more per detour. When no
    two possible waits (dependencies, and those steps' waits for such routers) close a
    cycle, places in a topological order of them bound every search instead: each candidate
    comes before its step there, so without a detour no search reaches one (every candidate
    is taken), and with one a path reaches a candidate only through the detour's wait, so
    only steps placed between the declarer and the target can differ, and a search goes no
    further than the target. Where possible waits form a cycle (two steps each reading the
    other's loop), the steps on it share one place: every possible wait still goes forward or
    stays in place, so the same bounds hold, and only the steps of that cycle search it.
    """
    if not graph.loop_edges:
        return {}
    order = graph.topological_order()
    successors = {step: graph.dependents(step) for step in order}
    candidates = _candidates(graph, successors)
    upstream_only = {
        step: all(graph.is_upstream(step, router) for router in routers)
        for step, routers in candidates.items()
    }
    place = {step: index for index, step in enumerate(order)}
    searched = {step for step, only in upstream_only.items() if not only}
    may_wait = {step: list(steps) for step, steps in successors.items()}  # every wait possible
    for step in searched:
        for router in candidates[step]:
            if not graph.is_upstream(step, router):
                may_wait[router].append(step)
    waited_by = _reverse(may_wait)
    bounds = _wait_order(waited_by)  # every possible wait goes forward or stays in place
    search = _Search(successors, bounds, None, 0)
    base = _guards_in_order(graph, order, candidates, search, upstream_only, set())
    tables: dict[Detour, dict[str, list[str]]] = {None: base}
    for edge in graph.detour_edges:
        declarer, target = edge.target, edge.source  # the detour's return edge
        low, high = bounds[declarer], bounds[target]
        between = _reach(declarer, may_wait, bounds, low, high) & _reach(
            target, waited_by, bounds, low, high
        )
        again = sorted(between & candidates.keys(), key=place.__getitem__)
        search = _Search(successors, bounds, (declarer, target), bounds[target])
        guards = _guards_in_order(graph, again, candidates, search, upstream_only, between)
        tables[(declarer, target)] = {
            step: guards.get(step, [])
            for step in again
            if guards.get(step, []) != base.get(step, [])
        }
    return tables


def _wait_order(waited_by: dict[str, list[str]]) -> dict[str, int]:
    """Each step's place in a topological order of every wait possible (``waited_by``: per
    step, the steps it may wait for); steps that could wait for each other share a place."""
    try:
        order = TopologicalSorter(waited_by).static_order()
        return {step: index for index, step in enumerate(order)}
    except CycleError:
        return _component_order(waited_by)


def _component_order(waited_by: dict[str, list[str]]) -> dict[str, int]:
    """:func:`_wait_order` where possible waits form cycles: each strongly connected component's
    place in a topological order of the components, for each of its steps."""
    import networkx as nx  # only for such a definition: its import costs the others nothing

    waits: nx.DiGraph[str] = nx.DiGraph()
    waits.add_nodes_from(waited_by)
    waits.add_edges_from(
        (before, step) for step, befores in waited_by.items() for before in befores
    )
    condensed = nx.condensation(waits)
    return {
        step: index
        for index, component in enumerate(nx.topological_sort(condensed))
        for step in condensed.nodes[component]["members"]
    }


def _reverse(successors: dict[str, list[str]]) -> dict[str, list[str]]:
    predecessors: dict[str, list[str]] = {step: [] for step in successors}
    for step, following in successors.items():
        for other in following:
            predecessors[other].append(step)
    return predecessors


def _reach(
    start: str, edges: dict[str, list[str]], place: dict[str, int], low: int, high: int
) -> set[str]:
    """``start`` and every step it reaches over ``edges`` through steps placed in
    [low, high]."""
    if not low <= place[start] <= high:
        return set()
    seen, todo = {start}, [start]
    while todo:
        for other in edges[todo.pop()]:
            if other not in seen and low <= place[other] <= high:
                seen.add(other)
                todo.append(other)
    return seen


def _candidates(graph: WorkflowGraph, successors: dict[str, list[str]]) -> dict[str, list[str]]:
    """Per step, in file order of the loops, the routers of the loops that would run again a
    step upstream of it without it: one search of the forward graph per loop."""
    candidates: dict[str, list[str]] = {}
    for router, reach in _reaches(graph):
        below: set[str] = set()
        todo = [s for member in reach for s in successors[member] if s not in reach]
        while todo:
            step = todo.pop()
            if step not in below and step not in reach:
                below.add(step)
                todo.extend(successors[step])
        for step in below:
            candidates.setdefault(step, []).append(router)
    return candidates


def _guards_in_order(
    graph: WorkflowGraph,
    steps: list[str],
    candidates: dict[str, list[str]],
    search: _Search,
    upstream_only: dict[str, bool],
    search_all: set[str],
) -> dict[str, list[str]]:
    """The routers each of ``steps`` (in topological order) waits for; a step marked in
    ``upstream_only`` (which holds every step with candidates) and not in ``search_all``
    takes every candidate without a search."""
    added: dict[str, list[str]] = {}  # waits taken on routers not upstream: router -> steps
    guards: dict[str, list[str]] = {}
    for step in steps:
        routers = candidates.get(step)
        if not routers:
            continue
        if upstream_only[step] and step not in search_all:
            guards[step] = list(routers)
            continue
        waiting = search.waiting(step, added)
        taken = [r for r in routers if r not in waiting]
        for router in taken:
            if not graph.is_upstream(step, router):
                added.setdefault(router, []).append(step)
        if taken:
            guards[step] = taken
    return guards


@dataclass(frozen=True)
class _Search:
    """Who waits for a step: through dependencies (``successors``), the waits added and,
    while a detour is under way, the declarer's wait for its target (``detour``: declarer,
    target)."""

    successors: dict[str, list[str]]
    place: dict[str, int]
    detour: tuple[str, str] | None
    bound: int
    """Every wait but the detour's goes forward or stays in place: a path past both the
    step's place and this one (the target's) never comes back, so it reaches no candidate
    (each is placed at or before the step) and is not followed."""

    def waiting(self, step: str, added: dict[str, list[str]]) -> set[str]:
        place = self.place
        last = max(place[step], self.bound)
        seen: set[str] = set()
        todo = [step]
        while todo:
            current = todo.pop()
            nexts = [*self.successors[current], *added.get(current, ())]
            if self.detour is not None and current == self.detour[1]:
                nexts.append(self.detour[0])
            for following in nexts:
                if following not in seen and place[following] <= last:
                    seen.add(following)
                    todo.append(following)
        return seen
