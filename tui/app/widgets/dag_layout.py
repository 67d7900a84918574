"""Layered (Sugiyama-like) layout of a workflow graph — pure, no Textual.

Layers are networkx topological generations of the graph without loop back
edges; an edge that spans several layers gets a dummy node in each layer it
crosses, so every drawn edge joins adjacent layers. Order within a layer comes
from a few barycenter sweeps seeded by declaration order; x positions follow
the parents' mean and are pushed apart to one slot minimum. The layout is a
function of the graph alone — never of step states — so nodes stay put while a
run changes colours.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

SWEEPS = 4


@dataclass(frozen=True)
class PlacedNode:
    id: str
    layer: int
    x: float
    """Position in slots (one slot = one node width plus a gap at the current zoom)."""
    dummy: bool = False
    group: str | None = None


@dataclass(frozen=True)
class Segment:
    """One drawn piece of an edge between layer ``layer`` and ``layer + 1``."""

    layer: int
    x_from: float
    x_to: float
    source: str
    target: str
    kind: str


@dataclass
class DagLayout:
    layers: list[list[PlacedNode]]
    segments: list[Segment]
    positions: dict[str, PlacedNode]
    width_slots: float
    group_layers: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Group name -> (first layer, last layer) holding one of its nodes."""
    back_edges: list[tuple[str, str, str]] = field(default_factory=list)
    """Edges not drawn as segments (loop back edges): (source, target, kind)."""

    @property
    def real_nodes(self) -> list[PlacedNode]:
        return [node for layer in self.layers for node in layer if not node.dummy]


def _acyclic(graph: nx.DiGraph) -> list[tuple[str, str]]:
    """Remove edges until ``graph`` is acyclic; returns the removed ones."""
    removed: list[tuple[str, str]] = []
    while True:
        try:
            cycle = nx.find_cycle(graph)
        except nx.NetworkXNoCycle:
            return removed
        source, target = cycle[-1][0], cycle[-1][1]
        graph.remove_edge(source, target)
        removed.append((source, target))


def compute_layout(
    nodes: list[str],
    edges: list[tuple[str, str, str]],
    groups: dict[str, str | None] | None = None,
) -> DagLayout:
    """Lay out ``nodes`` (declaration order) joined by ``edges`` (source, target, kind)."""
    groups = groups or {}
    order_index = {node: i for i, node in enumerate(nodes)}
    graph: nx.DiGraph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    kinds: dict[tuple[str, str], str] = {}
    back: list[tuple[str, str, str]] = []
    for source, target, kind in edges:
        if source not in order_index or target not in order_index or source == target:
            continue
        if kind == "loop":
            back.append((source, target, kind))
            continue
        graph.add_edge(source, target)
        kinds.setdefault((source, target), kind)
    for source, target in _acyclic(graph):
        back.append((source, target, kinds.get((source, target), "route")))

    layer_of: dict[str, int] = {}
    for depth, generation in enumerate(nx.topological_generations(graph)):
        for node in generation:
            layer_of[node] = depth
    layer_count = max(layer_of.values(), default=-1) + 1

    # Split long edges with dummy nodes so every segment joins adjacent layers.
    members: list[list[str]] = [[] for _ in range(layer_count)]
    for node in sorted(layer_of, key=order_index.__getitem__):
        members[layer_of[node]].append(node)
    chains: list[tuple[str, str, list[str]]] = []
    parents: dict[str, list[str]] = {node: [] for node in layer_of}
    for source, target in graph.edges:
        path = [source]
        for depth in range(layer_of[source] + 1, layer_of[target]):
            dummy = f"\0{source}\0{target}\0{depth}"
            members[depth].append(dummy)
            parents[dummy] = [path[-1]]
            path.append(dummy)
        path.append(target)
        parents[target].append(path[-2])
        chains.append((source, target, path))

    _order_layers(members, parents, order_index)
    x = _assign_x(members, parents)

    placed: dict[str, PlacedNode] = {}
    layers: list[list[PlacedNode]] = []
    group_layers: dict[str, tuple[int, int]] = {}
    for depth, layer in enumerate(members):
        row = []
        for node in layer:
            is_dummy = node.startswith("\0")
            group = None if is_dummy else groups.get(node)
            item = PlacedNode(id=node, layer=depth, x=x[node], dummy=is_dummy, group=group)
            row.append(item)
            placed[node] = item
            if group:
                first, last = group_layers.get(group, (depth, depth))
                group_layers[group] = (min(first, depth), max(last, depth))
        layers.append(row)

    segments = []
    for source, target, path in chains:
        kind = kinds.get((source, target), "depends_on")
        for upper, lower in zip(path, path[1:]):
            segments.append(Segment(placed[upper].layer, x[upper], x[lower], source, target, kind))
    width = max((p.x for p in placed.values()), default=0.0) + 1
    return DagLayout(
        layers=layers,
        segments=segments,
        positions=placed,
        width_slots=width,
        group_layers=group_layers,
        back_edges=back,
    )


def _order_layers(
    members: list[list[str]], parents: dict[str, list[str]], order_index: dict[str, int]
) -> None:
    """Barycenter sweeps (downwards then upwards) reduce crossings; ties keep declaration order."""
    children: dict[str, list[str]] = {}
    for node, ups in parents.items():
        for up in ups:
            children.setdefault(up, []).append(node)

    def seed(node: str) -> float:
        if node.startswith("\0"):
            # A long edge's dummy sorts with its target, so chains stay straight and bypasses go outside.
            return float(order_index.get(node.split("\0")[2], 0)) + 0.5
        return float(order_index[node])

    for layer in members:
        layer.sort(key=seed)
    for sweep in range(SWEEPS):
        downward = sweep % 2 == 0
        sequence = range(1, len(members)) if downward else range(len(members) - 2, -1, -1)
        for depth in sequence:
            neighbour_layer = members[depth - 1] if downward else members[depth + 1]
            rank = {node: i for i, node in enumerate(neighbour_layer)}
            links = parents if downward else children
            current = {node: i for i, node in enumerate(members[depth])}

            def barycenter(
                node: str,
                rank: dict[str, int] = rank,
                links: dict[str, list[str]] = links,
                current: dict[str, int] = current,
            ) -> tuple[float, float]:
                ranks = [rank[n] for n in links.get(node, []) if n in rank]
                centre = sum(ranks) / len(ranks) if ranks else float(current[node])
                return centre, seed(node)

            members[depth].sort(key=barycenter)


def _assign_x(members: list[list[str]], parents: dict[str, list[str]]) -> dict[str, float]:
    """Centre each run of siblings under their parents' mean, one slot apart at least."""
    x: dict[str, float] = {}
    for layer in members:
        keys = [tuple(sorted(parents.get(node, []))) for node in layer]
        previous = -1.0
        index = 0
        while index < len(layer):
            end = index
            while end + 1 < len(layer) and keys[end + 1] == keys[index] and keys[index]:
                end += 1
            ups = [x[p] for p in keys[index] if p in x]
            siblings = end - index + 1
            centre = sum(ups) / len(ups) if ups else float(index) + (siblings - 1) / 2
            for offset, node in enumerate(layer[index : end + 1]):
                wanted = centre - (siblings - 1) / 2 + offset
                position = max(round(wanted * 2) / 2, previous + 1.0)
                x[node] = position
                previous = position
            index = end + 1
    low = min(x.values(), default=0.0)
    return {node: value - low for node, value in x.items()}
