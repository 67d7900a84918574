"""A hypothesis strategy for VALID workflows of ``ref.probe`` steps, every construct included.

Steps ``s0 … s(n-1)`` depend only on lower indexes (the forward graph is
acyclic by construction); on top of that: trigger rules, optional steps,
``when`` conditions, ``x`` inputs computed by arithmetic CEL, deterministic
failures with retries, interrupts before/after (answered automatically,
some rejected), and routing — conditional and branch edges, loops (bodies with
outside dependents, nested and overlapping loops), detours (targets with their
own ``depends_on``), ``terminate_when`` and ``terminate: true`` outputs —
and small ``max_step_runs`` limits. Whatever the loader refuses is not a valid
workflow and is drawn again; nothing else is filtered out.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume
from hypothesis import strategies as st

from engine.errors import WorkflowLoadError
from engine.loader import load_workflow_text
from engine.spec import WorkflowDefinition
from tests.engine.kahn_helpers import TEST_REGISTRY

TRIGGERS = (
    "all_success",
    "all_done",
    "none_failed",
    "none_failed_min_one_success",
    "one_success",
    "one_failed",
)
INPUTS = {"n": {"type": "int", "default": 3}, "xs": {"type": "list", "default": [4, 5, 6]}}


def _ancestors(deps: list[list[int]], index: int) -> set[int]:
    seen: set[int] = set()
    todo = list(deps[index])
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(deps[current])
    return seen


@st.composite
def conditions(draw: st.DrawFn, readable: list[int], own: bool) -> str:
    """A boolean CEL expression over what a step may read (arithmetic included)."""
    choices = [
        "true",
        "false",
        "iteration >= 1",
        "(iteration + 1) % 2 == 0",
        "inputs.n > 2",
        "string(inputs.n) == '3'",
        "inputs.xs[size(inputs.xs) - 1] == 6",
    ]
    for i in readable:
        choices += [
            f"has(steps.s{i}.outputs.v)",
            f"steps.s{i}.status == 'SUCCEEDED'",
            f"has(steps.s{i}.outputs.n) && steps.s{i}.outputs.n + 1 >= 2",
        ]
    if own:
        choices += ["outputs.v % 2 == 1", "outputs.n >= 1", "outputs.status == 'B'"]
    first = draw(st.sampled_from(choices))
    if draw(st.integers(0, 3)) == 0:
        second = draw(st.sampled_from(choices))
        return f"{first} {draw(st.sampled_from(['&&', '||']))} {second}"
    return first


@st.composite
def workflows(draw: st.DrawFn, max_steps: int = 7) -> dict[str, Any]:
    size = draw(st.integers(2, max_steps))
    deps: list[list[int]] = [[]]
    for index in range(1, size):
        parents = [p for p in range(index) if draw(st.integers(0, 2)) == 0]
        if not parents and draw(st.booleans()):
            parents = [index - 1]
        deps.append(parents)
    steps: list[dict[str, Any]] = []
    for index in range(size):
        readable = sorted(_ancestors(deps, index))
        config: dict[str, Any] = {"value": draw(st.integers(0, 3))}
        spec: dict[str, Any] = {"id": f"s{index}", "uses": "ref.probe", "config": config}
        if deps[index]:
            spec["depends_on"] = [f"s{p}" for p in deps[index]]
        if draw(st.integers(0, 2)) == 0:
            spec["trigger"] = draw(st.sampled_from(TRIGGERS))
        if draw(st.integers(0, 4)) == 0:
            spec["optional"] = True
        if draw(st.integers(0, 4)) == 0:
            spec["when"] = draw(conditions(readable, own=False))
        if draw(st.integers(0, 3)) == 0:
            source = draw(st.sampled_from([*readable, None])) if readable else None
            spec["inputs"] = {
                "x": draw(
                    st.sampled_from(
                        [
                            "inputs.xs[size(inputs.xs) - 1]",
                            "(iteration + 1) % 2",
                            "string(inputs.n)",
                            "inputs.n * 2 - 1",
                        ]
                        + (
                            [
                                f"steps.s{source}.outputs.v + 1",
                                f"has(steps.s{source}.outputs.n) ? steps.s{source}.outputs.n : -1",
                            ]
                            if source is not None
                            else []
                        )
                    )
                )
            }
        if draw(st.integers(0, 4)) == 0:
            config["fail_times"] = draw(st.integers(1, 2))
            config["fail_from"] = draw(st.integers(0, 2))
            spec["retries"] = draw(st.integers(0, 2))
        if draw(st.integers(0, 5)) == 0:
            config["terminate_at"] = draw(st.integers(0, 2))
        if draw(st.integers(0, 3)) == 0:
            config["statuses"] = draw(st.sampled_from([["A", "B"], ["B", "A"], ["A"]]))
        if draw(st.integers(0, 5)) == 0:
            side = draw(st.sampled_from(["before", "after"]))
            prompt = draw(st.sampled_from(["approve?", "reject this"]))
            spec["interrupt"] = {side: True, "prompt": prompt}
        steps.append(spec)
    for index in range(size):
        routing = draw(routings(index, size, deps))
        if routing is not None:
            steps[index]["routing"] = routing
    data: dict[str, Any] = {"name": "generated", "inputs": INPUTS, "steps": steps}
    if draw(st.integers(0, 5)) == 0:
        data["limits"] = {"max_step_runs": draw(st.integers(2, 12))}
    if draw(st.integers(0, 4)) == 0:
        data["completion"] = {"required_steps": [f"s{draw(st.integers(0, size - 1))}"]}
    return data


@st.composite
def routings(
    draw: st.DrawFn, index: int, size: int, deps: list[list[int]]
) -> dict[str, Any] | None:
    if draw(st.integers(0, 2)) != 0:
        return None
    ancestors = sorted(_ancestors(deps, index))
    later = list(range(index + 1, size))
    readable = ancestors
    kind = draw(st.sampled_from(["loop", "conditional", "branch", "detour", "terminate"]))
    routing: dict[str, Any] = {}
    if later and draw(st.booleans()):
        routing["next"] = f"s{draw(st.sampled_from(later))}"
    if kind == "loop":
        target = draw(st.sampled_from([index, *ancestors]))
        routing["kind"] = draw(st.sampled_from(["loop", "conditional"]))
        routing["loop"] = {"target": f"s{target}", "max_iterations": draw(st.integers(1, 3))}
        if routing["kind"] == "conditional" or draw(st.booleans()):
            routing["conditions"] = [
                {"expr": draw(conditions(readable, own=True)), "target": f"s{target}"}
            ]
    elif kind == "conditional" and later:
        routing["kind"] = "conditional"
        routing["conditions"] = [
            {
                "expr": draw(conditions(readable, own=True)),
                "target": f"s{draw(st.sampled_from(later))}",
            }
            for _ in range(draw(st.integers(1, 2)))
        ]
    elif kind == "branch" and later:
        routing["kind"] = "branch"
        routing["branches"] = {
            "A": f"s{draw(st.sampled_from(later))}",
            "B": f"s{draw(st.sampled_from(later))}",
        }
    elif kind == "detour" and later:
        routing["kind"] = "linear" if "next" in routing else "conditional"
        if routing["kind"] == "conditional":
            routing["conditions"] = [
                {
                    "expr": draw(conditions(readable, own=True)),
                    "target": f"s{draw(st.sampled_from(later))}",
                }
            ]
        routing["detour"] = {
            "target": f"s{draw(st.sampled_from(later))}",
            "when": draw(conditions(readable, own=True)),
        }
    else:
        routing["kind"] = "linear"
        routing["terminate_when"] = draw(conditions(readable, own=True))
    if (
        routing.get("kind") == "linear"
        and "next" not in routing
        and "terminate_when" not in routing
    ):
        routing["kind"] = "conditional"
    return routing


def load(data: dict[str, Any]) -> WorkflowDefinition:
    """The generated definition through the real loader; a refusal draws again."""
    try:
        return load_workflow_text(json.dumps(data), source="generated.yaml", registry=TEST_REGISTRY)
    except WorkflowLoadError:
        assume(False)
        raise
