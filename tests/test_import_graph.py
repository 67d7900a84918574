"""No import cycle among the project's modules (DESIGN §1), imports under TYPE_CHECKING included.

import-linter's contracts check the arrows between packages and layers; a cycle inside one
layer passes them, so the whole graph is built here (grimp, the graph import-linter builds) and
every strongly connected component of more than one module is reported with one of its cycles.
"""

from __future__ import annotations

import grimp
import networkx as nx

PACKAGES = ("plumbing", "engine", "router", "agents", "research", "workflows", "tui")


def test_no_module_imports_itself_through_others() -> None:
    graph = grimp.build_graph(*PACKAGES)
    imports = nx.DiGraph()
    for module in graph.modules:
        imports.add_node(module)
        for imported in graph.find_modules_directly_imported_by(module):
            imports.add_edge(module, imported)
    cycles = [
        " -> ".join([edge[0] for edge in cycle] + [cycle[0][0]])
        for cycle in (
            nx.find_cycle(imports.subgraph(component))
            for component in nx.strongly_connected_components(imports)
            if len(component) > 1
        )
    ]
    assert cycles == [], "import cycles:\n" + "\n".join(sorted(cycles))
