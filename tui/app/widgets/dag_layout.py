"""Layered (Sugiyama-like) layout of a workflow graph — pure, no Textual.

Layers are networkx topological generations of the graph without loop back
edges; an edge that spans several layers gets a dummy node in each layer it
crosses, so every drawn edge joins adjacent layers. Order within a layer comes
from a few barycenter sweeps seeded by declaration order.

x positions are character columns of each node's centre. A step is
``node_width`` columns wide; a dummy is a one-column lane, so long edges cost
two columns each rather than a node's width. A step sits under the mean of its
*step* parents only — a long edge arriving from far above does not pull it
sideways — and a lane runs straight down from where it left. Without that pull
a chain of rounds stays in one column however many long edges cross it (it
used to drift right by half a slot per round). Nodes are then pushed apart to
keep a gap. The layout is a function of the graph and the node width alone —
never of step states — so nodes stay put while a run changes colours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx

SWEEPS = 4
NODE_GAP = 2
"""Blank columns between two nodes when one of them is a step."""
LANE_GAP = 1
"""Blank columns between two long-edge lanes."""


@dataclass(frozen=True)
class PlacedNode:
    id: str
    layer: int
    x: float
    """Column of the node's centre (a step spans ``node_width`` columns around it)."""
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
    width: int
    """Columns from the left edge of the leftmost node to the right edge of the rightmost."""
    node_width: int
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
    node_width: int = 18,
) -> DagLayout:
    """Lay out ``nodes`` (declaration order) joined by ``edges`` (source, target, kind), each step
    ``node_width`` columns wide."""
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
    x = _assign_x(members, parents, node_width)

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
    width = max((x[n] + _extent(n, node_width)[1] + 1 for n in x), default=0)
    return DagLayout(
        layers=layers,
        segments=segments,
        positions=placed,
        width=int(width),
        node_width=node_width,
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


def _extent(node: str, node_width: int) -> tuple[int, int]:
    """Columns a node takes left and right of its centre column."""
    if node.startswith("\0"):
        return 0, 0
    return node_width // 2, node_width - node_width // 2 - 1


def _assign_x(
    members: list[list[str]], parents: dict[str, list[str]], node_width: int
) -> dict[str, float]:
    """Centre each run of sibling steps under their step parents' mean and each lane under its
    parent; push them apart left to right to keep the gaps."""
    x: dict[str, float] = {}
    for layer in members:
        keys = []
        for node in layer:
            linked = parents.get(node, [])
            steps = [p for p in linked if not p.startswith("\0")]
            keys.append(tuple(sorted(steps if steps and not node.startswith("\0") else linked)))
        right_edge: float | None = None
        previous_lane = False
        index = 0
        while index < len(layer):
            end = index
            while (
                end + 1 < len(layer)
                and keys[end + 1] == keys[index]
                and keys[index]
                and not layer[index].startswith("\0")
                and not layer[end + 1].startswith("\0")
            ):
                end += 1
            block = layer[index : end + 1]
            spans = [_extent(node, node_width) for node in block]
            ups = [x[p] for p in keys[index] if p in x]
            if ups:
                # the block's centres side by side; their mean goes under the parents' mean, so a
                # child of the whole block (their join) lands back in the parents' column
                centres: list[int] = []
                edge = 0
                for left, right in spans:
                    centres.append(edge + left)
                    edge += left + right + 1 + NODE_GAP
                start = math.floor(sum(ups) / len(ups) - sum(centres) / len(centres))
            else:
                start = 0 if right_edge is None else int(right_edge) + NODE_GAP + 1
            for node, (left, right) in zip(block, spans):
                lane = node.startswith("\0")
                gap = LANE_GAP if lane and previous_lane else NODE_GAP
                lowest = start if right_edge is None else max(start, int(right_edge) + gap + 1)
                x[node] = float(lowest + left)
                right_edge = x[node] + right
                start = int(right_edge) + NODE_GAP + 1
                previous_lane = lane
            index = end + 1
    low = min((x[n] - _extent(n, node_width)[0] for n in x), default=0.0)
    return {node: value - low for node, value in x.items()}
