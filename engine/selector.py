"""Which engine runs a workflow, and why (DESIGN §5).

Workflows with cycles (loops, returning detours) go to LangGraph, whose
supersteps and conditional edges model them natively; acyclic workflows go to
Kahn — interrupts included, because on Kahn an interrupt holds only its own
step. A user's choice (``--engine``, or ``engine:`` in the YAML) always wins.
The reason is recorded with the run.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.graph import WorkflowGraph
from engine.spec import WorkflowDefinition

if TYPE_CHECKING:
    from engine.protocol import ExecutionEngine

ENGINES = ("kahn", "langgraph")
_MODULES = {
    "kahn": ("engine.kahn", "KahnEngine"),
    "langgraph": ("engine.langgraph_engine", "LangGraphEngine"),
}


@dataclass(frozen=True)
class EngineSelection:
    name: str
    reason: str


def engine_available(name: str) -> bool:
    module, _ = _MODULES[name]
    return importlib.util.find_spec(module) is not None


def select_engine(wf: WorkflowDefinition, override: str | None = None) -> EngineSelection:
    """The engine for ``wf``: ``override`` (unless "auto"), else the YAML's ``engine``, else by shape."""
    if override and override != "auto":
        chosen = EngineSelection(override, f"{override} chosen on the command line")
    elif wf.engine != "auto":
        chosen = EngineSelection(
            wf.engine, f"{wf.engine} chosen by the workflow (engine: {wf.engine})"
        )
    else:
        graph = WorkflowGraph.of(wf)
        if graph.has_cycles:
            kinds = [
                kind
                for kind, edges in (("loops", graph.loop_edges), ("detours", graph.detour_edges))
                if edges
            ]
            chosen = EngineSelection(
                "langgraph", f"auto: the workflow has cycles ({' and '.join(kinds)})"
            )
        else:
            has_interrupts = any(step.interrupt is not None for step in wf.steps)
            note = "; an interrupt holds only its own step" if has_interrupts else ""
            chosen = EngineSelection("kahn", f"auto: acyclic, wavefront scheduling{note}")
    if not engine_available(chosen.name):
        return EngineSelection(
            "kahn", f"{chosen.reason}; the {chosen.name} engine is not installed, so kahn"
        )
    return chosen


def create_engine(name: str) -> ExecutionEngine:
    module_name, class_name = _MODULES[name]
    engine_class = getattr(importlib.import_module(module_name), class_name)
    engine: ExecutionEngine = engine_class()
    return engine
