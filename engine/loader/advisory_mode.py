"""``mode: advisory`` (ADR-002 §6): a workflow that names agents instead of steps.

Its ``advisory`` section (engine/agents/advisory.py) is checked here, each
problem at its place, and becomes the workflow's one step — the orchestrator,
``uses: advisory.orchestrator``, the section as its config — so every later
stage of the loader (and both engines) sees an ordinary one-step workflow.
"""

from __future__ import annotations

from engine.loader.located_yaml import Node
from engine.loader.problems import Problems
from engine.loader.step_checks import descend
from engine.steps import StepRegistry

MODE_KEYS = ("mode", "advisory")


def advisory_root(problems: Problems, root: Node, registry: StepRegistry) -> Node:
    """``root`` with ``steps`` made from its ``advisory`` section (unchanged when that fails)."""
    # the agents' models load only for an advisory workflow: a strict one's check starts faster
    from engine.agents.advisory import ORCHESTRATOR_STEP, ORCHESTRATOR_STEP_ID, check_advisory
    from engine.agents.registry import AGENT_PREFIX

    mode = root.value["mode"]
    if mode.value != "advisory":
        problems.add(
            mode, f"mode must be 'advisory' (or left out for a strict workflow), got {mode.value!r}"
        )
        return root
    if "steps" in root.value:
        problems.add(
            root.key_mark("steps"),
            "an advisory workflow has no steps: its orchestrator invokes the agents in 'advisory'",
        )
        return root
    section = root.get("advisory")
    if section is None or not section.is_map:
        problems.add(
            section or mode,
            "mode: advisory needs an 'advisory' mapping (orchestrator, required_agents, "
            "optional_agents, suggested_sequence, completion)",
        )
        return root
    agents = {n.removeprefix(AGENT_PREFIX) for n in registry.names() if n.startswith(AGENT_PREFIX)}
    _, found = check_advisory(section.plain(), agents)
    for path, message in found:
        where = ".".join(str(part) for part in path)
        at: Node | tuple[int, int] = descend(section, *path)
        if message.startswith("unknown key") and path and isinstance(path[-1], str):
            at = descend(section, *path[:-1]).key_mark(path[-1])
        problems.add(at, f"advisory{'.' + where if where else ''}: {message}")
    line, column = section.line, section.column
    step = {
        "id": Node(ORCHESTRATOR_STEP_ID, line, column),
        "uses": Node(ORCHESTRATOR_STEP, line, column),
        "config": section,
    }
    value = {**root.value, "steps": Node([Node(step, line, column)], line, column)}
    return Node(value, root.line, root.column, root.style, dict(root.keys))
