"""Workflow modes (ADR-002 §6): a workflow that says ``mode: NAME`` instead of listing steps.

The engine knows no mode itself: the owner of a mode registers it in the step registry
(:class:`engine.steps.WorkflowMode`; the agents register ``advisory``). Its section, the
mapping named like the mode, is checked here with the mode's own check, each problem at its
place, and becomes the workflow's one step — the mode's step, the section as its config — so
every later stage of the loader (and both engines) sees an ordinary one-step workflow.
"""

from __future__ import annotations

from engine.loader.located_yaml import Node
from engine.loader.problems import Problems
from engine.loader.step_checks import descend
from engine.steps import StepRegistry

MODE_KEY = "mode"


def mode_keys(root: Node) -> tuple[str, ...]:
    """The top-level keys a mode adds: ``mode`` and the section it names."""
    mode = root.value.get(MODE_KEY)
    named = (mode.value,) if mode is not None and isinstance(mode.value, str) else ()
    return (MODE_KEY, *named)


def mode_root(problems: Problems, root: Node, registry: StepRegistry) -> Node:
    """``root`` with ``steps`` made from its mode's section (unchanged when that fails)."""
    mode = root.value[MODE_KEY]
    modes = registry.modes()
    spec = modes.get(mode.value) if isinstance(mode.value, str) else None
    if spec is None:
        known = " or ".join(repr(name) for name in modes) or "left out here (no mode is known)"
        problems.add(
            mode, f"mode must be {known} (or left out for a strict workflow), got {mode.value!r}"
        )
        return root
    name = mode.value
    if "steps" in root.value:
        problems.add(
            root.key_mark("steps"), f"an {name} workflow has no steps: {spec.runs_instead}"
        )
        return root
    section = root.get(name)
    if section is None or not section.is_map:
        problems.add(
            section or mode, f"mode: {name} needs an '{name}' mapping ({spec.section_keys})"
        )
        return root
    refused = spec.check(section.plain(), registry)
    for path, message in refused:
        where = ".".join(str(part) for part in path)
        at: Node | tuple[int, int] = descend(section, *path)
        if message.startswith("unknown key") and path and isinstance(path[-1], str):
            at = descend(section, *path[:-1]).key_mark(path[-1])
        problems.add(at, f"{name}{'.' + where if where else ''}: {message}")
    line, column = section.line, section.column
    # A section its check refused still makes the step (the rest of the workflow may name it),
    # but without the section as its config: the step's checks would refuse the same values
    # again, at the same places.
    step = {
        "id": Node(spec.step_id, line, column),
        "uses": Node(spec.uses, line, column),
        **({} if refused else {"config": section}),
    }
    value = {**root.value, "steps": Node([Node(step, line, column)], line, column)}
    return Node(value, root.line, root.column, root.style, dict(root.keys))
