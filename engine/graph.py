"""The workflow graph (DESIGN §5 graph semantics).

Two kinds of edges:

- **Forward edges** order steps. ``depends_on`` gives one from each dependency
  to the step; a routing target gives one from the routing step to the target
  (the router must finish before its target can start) — including a detour's
  target.
- **Back edges** order nothing: a loop's edge from the routing step back to its
  target (an ancestor, or the step itself), and a detour's return from the
  detour target to the step that declared it.

The forward graph of a loaded definition is acyclic (the loader checks it);
``forward_cycles`` exists so the loader can report the cycles of one that is not.

Reachability is answered by the short plain algorithms below (breadth-first search, Tarjan's
strongly connected components) over the adjacency lists the graph keeps anyway: importing
networkx (about 300 modules) took a fifth of `workbench validate`'s start-up, which must stay
well under half a second. networkx is imported only to describe the cycles of a definition the loader
refuses (``forward_cycles``).
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import ConfigDict, TypeAdapter

from engine.events import GraphEdge, GraphNode
from engine.spec import StepSpec, WorkflowDefinition

ForwardKind = Literal["depends_on", "route", "detour"]

_ROUTING_KINDS = frozenset({"route", "detour"})
_NODES = TypeAdapter(list[GraphNode], config=ConfigDict(defer_build=True))
_EDGES = TypeAdapter(list[GraphEdge], config=ConfigDict(defer_build=True))

KEPT_GRAPHS = 4
"""How many definitions' graphs :meth:`WorkflowGraph.of` keeps (the last used)."""
_KEPT: dict[int, WorkflowGraph] = {}
"""id of a definition -> its graph, least recently used first."""
_KEPT_LOCK = threading.Lock()

Adjacency = Mapping[str, Sequence[str]]
"""Each step's neighbours on one side: its successors, or its predecessors."""


def reached_from(start: str, neighbours: Adjacency) -> set[str]:
    """Every step a path of at least one edge leads to from ``start``, ``start`` itself left
    out (as networkx's ``descendants`` / ``ancestors`` do)."""
    seen: set[str] = set()
    frontier = list(neighbours[start])
    while frontier:
        step = frontier.pop()
        if step not in seen:
            seen.add(step)
            frontier.extend(neighbours[step])
    seen.discard(start)
    return seen


def strongly_connected_components(
    steps: Iterable[str], successors: Adjacency
) -> Iterator[list[str]]:
    """Tarjan's algorithm, iterative (a 10,000-step chain would overflow a recursive one):
    each strongly connected component once, every component after the ones it reaches."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(step: str) -> tuple[str, Iterator[str]]:
        index[step] = low[step] = len(index)
        stack.append(step)
        on_stack.add(step)
        return step, iter(successors[step])

    for root in steps:
        if root in index:
            continue
        work = [visit(root)]
        while work:
            step, children = work[-1]
            for child in children:
                if child not in index:
                    work.append(visit(child))
                    break
                if child in on_stack:
                    low[step] = min(low[step], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[step])
                if low[step] == index[step]:
                    component: list[str] = []
                    while not component or component[-1] != step:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    yield component


@dataclass(frozen=True)
class BackEdge:
    source: str
    target: str
    kind: Literal["loop", "detour_return"]


class _Reachability:
    """ "Is there a path from a to b?" for every pair, answered in constant time.

    Built once per graph in near-linear time: the strongly connected components
    (iterative Tarjan), then, in topological order of the components, each
    component's set of upstream components as an int used as a bit set. A
    bit-set union costs a few machine words per 64 components, so even a
    10,000-step chain — where the last step has every other one upstream —
    builds in milliseconds, where one ancestor set per step is quadratic.
    """

    def __init__(self, successors: Adjacency) -> None:
        components = list(strongly_connected_components(successors, successors))
        self._component = {
            node: index for index, members in enumerate(components) for node in members
        }
        self._cyclic = [len(members) > 1 for members in components]
        upstream_of: list[set[int]] = [set() for _ in components]
        downstream_of: list[set[int]] = [set() for _ in components]
        for source, targets in successors.items():
            of_source = self._component[source]
            for target in targets:
                of_target = self._component[target]
                if of_source == of_target:
                    self._cyclic[of_source] = True
                else:
                    upstream_of[of_target].add(of_source)
                    downstream_of[of_source].add(of_target)
        self._upstream = [0] * len(components)
        waiting = [len(upstream) for upstream in upstream_of]
        ready = [index for index, count in enumerate(waiting) if count == 0]
        while ready:
            index = ready.pop()
            bits = 0
            for before in upstream_of[index]:
                bits |= self._upstream[before] | (1 << before)
            self._upstream[index] = bits
            for after in downstream_of[index]:
                waiting[after] -= 1
                if waiting[after] == 0:
                    ready.append(after)

    def reaches(self, source: str, target: str) -> bool:
        """A path of at least one edge leads from ``source`` to ``target``."""
        if source not in self._component or target not in self._component:
            return False
        of_source, of_target = self._component[source], self._component[target]
        if of_source == of_target:
            return self._cyclic[of_source]
        return bool(self._upstream[of_target] >> of_source & 1)


class WorkflowGraph:
    """The graph of one definition; every query is answered from the forward DAG.

    The queries the engines ask for every step they schedule — dependencies,
    dependents, routers, the topological order — come from plain adjacency
    lists built once; the whole-graph queries the loader and loops need (ancestors,
    descendants, reachability) walk the same lists, once per question, then are kept.
    """

    @classmethod
    def of(cls, wf: WorkflowDefinition) -> WorkflowGraph:
        """The graph of ``wf``, built once per definition object and kept for the few
        definitions used last: a run's start builds nothing the loader's checks, the
        engine's selection or a run of the same definition already built — the adjacency, the topological order, the ``run_started`` graph, what
        other modules derive from the graph (engine/readiness.py). A definition is frozen and
        never changed in place (a changed workflow is a new definition: a new graph)."""
        key = id(wf)
        with _KEPT_LOCK:
            graph = _KEPT.pop(key, None)
            if graph is None or graph.workflow is not wf:
                graph = cls(wf)
            _KEPT[key] = graph  # the entry holds ``wf``: its id is not reused meanwhile
            while len(_KEPT) > KEPT_GRAPHS:
                del _KEPT[next(iter(_KEPT))]
        return graph

    def __init__(self, wf: WorkflowDefinition) -> None:
        self.workflow = wf
        self._order = {step.id: index for index, step in enumerate(wf.steps)}
        self._building_kinds: dict[tuple[str, str], set[ForwardKind]] = {}
        self._incoming: dict[str, list[str]] = {step_id: [] for step_id in self._order}
        self._outgoing: dict[str, list[str]] = {step_id: [] for step_id in self._order}
        self.loop_edges: list[BackEdge] = []
        """Routing step -> loop target (its ancestor or itself), one per declared loop."""
        self.detour_edges: list[BackEdge] = []
        """Detour target -> the step that declared it: the return of a ``returns: true`` detour."""
        self._detour_of: dict[str, str] = {}
        for spec in wf.steps:
            for dependency in spec.depends_on:
                self._add_forward(dependency, spec.id, "depends_on")
            self._add_routing(spec)
        # Built, the adjacency is kept in tuples: the cycle collector stops tracking tuples of
        # text, so a large workflow's graph does not slow every collection of its run.
        self._predecessors = {
            step: tuple(sorted(steps, key=self._order.__getitem__))
            for step, steps in self._incoming.items()
        }
        self._successors = {
            step: tuple(sorted(steps, key=self._order.__getitem__))
            for step, steps in self._outgoing.items()
        }
        del self._incoming, self._outgoing
        shared: dict[frozenset[ForwardKind], frozenset[ForwardKind]] = {}
        self._kinds = {
            edge: shared.setdefault(frozenset(kinds), frozenset(kinds))
            for edge, kinds in self._building_kinds.items()
        }
        """Forward edges, (source, target) -> their kinds (one frozenset per combination)."""
        del self._building_kinds
        self._routers = {
            step_id: tuple(p for p in predecessors if self._kinds[p, step_id] & _ROUTING_KINDS)
            for step_id, predecessors in self._predecessors.items()
        }
        self._topological: list[str] | None = None
        self._ancestors: dict[str, frozenset[str]] = {}
        self._descendants: dict[str, frozenset[str]] = {}
        self._back_edged_predecessors: dict[str, list[str]] | None = None
        self._back_edged_successors: dict[str, list[str]] | None = None
        self._forward_reach: _Reachability | None = None
        self._full_reach: _Reachability | None = None
        self._announced: tuple[list[GraphNode], list[GraphEdge]] | None = None

    def _add_forward(self, source: str, target: str, kind: ForwardKind) -> None:
        if source not in self._order or target not in self._order:
            return
        kinds = self._building_kinds.get((source, target))
        if kinds is None:
            self._building_kinds[source, target] = {kind}
            self._incoming[target].append(source)
            self._outgoing[source].append(target)
        else:
            kinds.add(kind)

    def _add_routing(self, spec: StepSpec) -> None:
        routing = spec.routing
        if routing is None:
            return
        loop_target = routing.loop.target if routing.loop else None
        detour_target = routing.detour.target if routing.detour else None
        if loop_target is not None and loop_target in self._order:
            self.loop_edges.append(BackEdge(spec.id, loop_target, "loop"))
        for target in routing.targets():
            if target == loop_target:
                continue
            if target == detour_target:
                self._add_forward(spec.id, target, "detour")
                self._detour_of.setdefault(target, spec.id)
                if routing.detour is not None and routing.detour.returns and target in self._order:
                    self.detour_edges.append(BackEdge(target, spec.id, "detour_return"))
            else:
                self._add_forward(spec.id, target, "route")

    # -- structure ---------------------------------------------------------
    @property
    def has_cycles(self) -> bool:
        """True when loops or returning detours exist (LangGraph under ``engine: auto``)."""
        return bool(self.loop_edges or self.detour_edges)

    def forward_cycles(self) -> list[list[tuple[str, str, frozenset[str]]]]:
        """One cycle per strongly connected part of the forward graph: [(source, target, kinds)]."""
        cycles: list[list[tuple[str, str, frozenset[str]]]] = []
        try:
            self.topological_order()
        except ValueError:
            pass
        else:
            return cycles
        import networkx as nx  # only to describe the cycles of a definition that is refused

        forward: nx.DiGraph = nx.DiGraph()
        forward.add_nodes_from(self._order)
        forward.add_edges_from(self._kinds)
        components = sorted(
            (
                sorted(c, key=self._order.__getitem__)
                for c in nx.strongly_connected_components(forward)
            ),
            key=lambda c: self._order[c[0]],
        )
        for component in components:
            first = component[0]
            if len(component) == 1 and not forward.has_edge(first, first):
                continue
            edges = nx.find_cycle(forward.subgraph(component), source=first)
            cycles.append([(s, t, frozenset(self._kinds[s, t])) for s, t in edges])
        return cycles

    def first_in_definition(self, step_id: str, other: str) -> str:
        """Whichever of two steps comes first in the workflow file (after template expansion)."""
        return step_id if self._order[step_id] <= self._order[other] else other

    def topological_order(self) -> list[str]:
        """Steps in dependency order; ties broken by declaration order (deterministic).

        Kahn's algorithm with the ready steps in a heap keyed by declaration
        order: the lexicographically smallest topological order. Raises
        ValueError when the forward graph has a cycle (the loader rejects those).
        """
        if self._topological is None:
            order = self._order
            missing = {step: len(predecessors) for step, predecessors in self._predecessors.items()}
            ready = [(order[step], step) for step, count in missing.items() if count == 0]
            heapq.heapify(ready)
            result: list[str] = []
            while ready:
                _, step = heapq.heappop(ready)
                result.append(step)
                for dependent in self._successors[step]:
                    missing[dependent] -= 1
                    if missing[dependent] == 0:
                        heapq.heappush(ready, (order[dependent], dependent))
            if len(result) != len(order):
                raise ValueError(f"the forward graph of {self.workflow.name!r} has a cycle")
            self._topological = result
        return list(self._topological)

    def dependencies(self, step_id: str) -> list[str]:
        """Every forward predecessor: ``depends_on`` plus routers that target the step."""
        return list(self._predecessors[step_id])

    def dependents(self, step_id: str) -> list[str]:
        """Every forward successor: steps that depend on it plus its forward routing targets."""
        return list(self._successors[step_id])

    def routers_of(self, step_id: str) -> list[str]:
        """Steps with a forward routing edge (route or detour) to ``step_id``."""
        return list(self._routers[step_id])

    def edge_kinds(self, source: str, target: str) -> frozenset[str]:
        return frozenset(self._kinds.get((source, target), ()))

    def ancestors(self, step_id: str) -> frozenset[str]:
        """Steps with a forward path to ``step_id`` (not including it)."""
        if step_id not in self._ancestors:
            self._ancestors[step_id] = frozenset(reached_from(step_id, self._predecessors))
        return self._ancestors[step_id]

    def descendants(self, step_id: str) -> frozenset[str]:
        """Steps reachable from ``step_id`` on forward edges (not including it)."""
        if step_id not in self._descendants:
            self._descendants[step_id] = frozenset(reached_from(step_id, self._successors))
        return self._descendants[step_id]

    def is_upstream(self, step_id: str, other: str) -> bool:
        """``other`` has a forward path to ``step_id`` (is one of its ancestors); constant time
        after a near-linear first call, for checks that ask it of every step."""
        if self._forward_reach is None:
            self._forward_reach = _Reachability(self._successors)
        return other != step_id and self._forward_reach.reaches(other, step_id)

    def can_read(self, step_id: str, other: str) -> bool:
        """``other`` is in :meth:`visible_from` of ``step_id``; constant time after a
        near-linear first call."""
        if self._full_reach is None:
            self._full_reach = _Reachability(self._back_edged()[1])
        return self._full_reach.reaches(other, step_id)

    def between(self, ancestor: str, descendant: str) -> list[str]:
        """The steps a loop from ``descendant`` back to ``ancestor`` resets, both ends included,
        in topological order: every step on a forward path from one to the other."""
        if ancestor == descendant:
            return [ancestor]
        if ancestor not in self.ancestors(descendant):
            raise ValueError(f"{ancestor!r} is not upstream of {descendant!r}")
        inside = (self.descendants(ancestor) & self.ancestors(descendant)) | {ancestor, descendant}
        return [step for step in self.topological_order() if step in inside]

    def detour_declarer(self, target: str) -> str | None:
        """The step whose detour targets ``target`` (the detour's return address), if any."""
        return self._detour_of.get(target)

    def detour_blockers(self, declarer: str, target: str) -> list[str]:
        """The dependencies of a detour's ``target`` (besides ``declarer``) that run only after
        ``declarer``: while any exists the detour could never start."""
        later = self.descendants(declarer)
        return [d for d in self.dependencies(target) if d != declarer and d in later]

    def _back_edged(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """The forward graph plus the back edges of loops and detour returns:
        (predecessors, successors)."""
        if self._back_edged_predecessors is None or self._back_edged_successors is None:
            predecessors = {step: list(steps) for step, steps in self._predecessors.items()}
            successors = {step: list(steps) for step, steps in self._successors.items()}
            for edge in (*self.loop_edges, *self.detour_edges):
                if edge.target not in successors[edge.source]:
                    successors[edge.source].append(edge.target)
                    predecessors[edge.target].append(edge.source)
            self._back_edged_predecessors = predecessors
            self._back_edged_successors = successors
        return self._back_edged_predecessors, self._back_edged_successors

    def visible_from(self, step_id: str) -> frozenset[str]:
        """Steps whose results ``step_id`` may read: its ancestors, counting back edges.

        A loop's back edge makes the steps of the loop body (and their
        ancestors) visible to the loop target on later iterations, and a
        detour's return makes the detour target visible to the declaring step.
        A step is visible to itself only when it is on such a cycle.
        """
        predecessors, successors = self._back_edged()
        seen = frozenset(reached_from(step_id, predecessors))
        on_cycle = any(
            successor == step_id or successor in seen for successor in successors[step_id]
        )
        return seen | {step_id} if on_cycle else seen

    # -- timing and display --------------------------------------------------
    def critical_path(self, durations: Mapping[str, float]) -> tuple[float, list[str]]:
        """The longest chain of forward edges weighted by step durations: (length, steps).

        Steps missing from ``durations`` count as zero. This is the physical
        lower bound on a run's makespan with unlimited parallelism.
        """
        finish: dict[str, float] = {}
        previous: dict[str, str | None] = {}
        for step in self.topological_order():
            parents = self.dependencies(step)
            latest = max(parents, key=finish.__getitem__) if parents else None
            start = finish[latest] if latest is not None else 0.0
            finish[step] = start + float(durations.get(step, 0.0))
            previous[step] = latest
        if not finish:
            return 0.0, []
        end = max(finish, key=lambda s: (finish[s], -self._order[s]))
        path: list[str] = []
        cursor: str | None = end
        while cursor is not None:
            path.append(cursor)
            cursor = previous[cursor]
        return finish[end], list(reversed(path))

    def nodes_and_edges(self) -> tuple[list[GraphNode], list[GraphEdge]]:
        """The graph as the ``run_started`` event carries it: one edge per pair of steps,
        its kind the most specific one (loop, detour, route, then depends_on). Built once
        per graph: the lists are shared (of frozen models), and nobody changes them."""
        if self._announced is None:
            self._announced = self._nodes_and_edges()
        return self._announced

    def _nodes_and_edges(self) -> tuple[list[GraphNode], list[GraphEdge]]:
        nodes = [
            {
                "id": spec.id,
                "uses": spec.uses,
                "group": spec.group,
                "optional": spec.optional,
                "has_interrupt": spec.interrupt is not None,
            }
            for spec in self.workflow.steps
        ]
        edges: list[dict[str, str]] = []
        for source, target in sorted(
            self._kinds, key=lambda e: (self._order[e[0]], self._order[e[1]])
        ):
            kinds = self._kinds[source, target]
            kind = "detour" if "detour" in kinds else "route" if "route" in kinds else "depends_on"
            edges.append({"source": source, "target": target, "kind": kind})
        edges.extend(
            {"source": e.source, "target": e.target, "kind": "loop"} for e in self.loop_edges
        )
        # validated as lists, one call each: a model built per node costs twice as much
        return _NODES.validate_python(nodes), _EDGES.validate_python(edges)
