"""Workflow loading benchmark (printed, never asserted).

1. Load time (YAML reading, every step check and the graph checks) of chains
   of 1k, 5k and 10k steps, in two shapes: *plain* (each step depends on the
   one before it) and *with CEL* (each step also reads the previous step's
   status in ``when`` and its outputs in ``inputs``: two expressions per step
   to parse and check). A chain is the worst shape for per-step ancestor sets
   — its last step has every other step upstream — so near-linear loading
   shows as a flat time per step (the ratio to the 1k chain's, near 1.0).
   Wall and CPU seconds are printed: on a loaded machine wall time mostly
   measures waiting for a core.
2. Side by side on the same graphs: the graph stage's "may step A read step
   B?" answered from one ancestor set per step (how the loader did it before)
   and from the reachability bit sets it uses now.
3. The readiness tables a run builds once per graph (engine/readiness.py: which loop
   routers each step waits for, per detour under way) of chains of 10-step loops, each
   with a detour off its middle: CPU seconds and per step (flat when near-linear), and side
   by side on small chains with the definition it equals (tests/engine/test_loop_guards.py:
   the waits graph searched per step and per detour — cubic). The same chains with each
   loop's body read by a step outside it, which the next segment depends on (a loop router
   not upstream of the step: searched per detour over the whole graph before issue 26's sixth
   session, cubic too); and those behind two loops read from outside into each other
   ("crossed": the possible waits form a cycle — the whole-graph fallback, cubic, until the
   steps of a cycle shared one place).
4. The check that no number is infinite or NaN, side by side on a 5,000-step chain whose steps
   each have a timeout and a small config: the whole definition dumped and walked (how the
   loader did it before) and the models refusing typed floats themselves with only the
   free-form values walked in the YAML as read (now: ``allow_inf_nan=False`` costs nothing
   measurable, so the walk is all it adds). The load before is this load less the walk plus
   the dump.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable
from typing import Any

import engine.demo_steps  # noqa: F401 - registers demo.echo
from engine.graph import WorkflowGraph
from engine.loader import load_workflow_text
from engine.loader.finite import check_finite, check_finite_inputs
from engine.loader.located_yaml import Node, YamlReader
from engine.loader.problems import Problems
from engine.readiness import _build_tables
from engine.spec import WorkflowDefinition
from tests.engine.test_loop_guards import chain, defined_guards

SIZES = (1_000, 5_000, 10_000)
SIDE_BY_SIDE_SIZES = (1_000, 2_000)
LOOP_SEGMENTS = (100, 200, 500)
"""Chains of 1,100, 2,200 and 5,500 steps (ten a loop, one its detour's target)."""
DEFINED_SEGMENTS = (10, 30)
FINITE_SIZE = 5_000


def plain_chain(size: int) -> str:
    lines = ["name: chain", "steps:", "  - {id: s0, uses: demo.echo}"]
    lines += [f"  - {{id: s{i}, uses: demo.echo, depends_on: [s{i - 1}]}}" for i in range(1, size)]
    return "\n".join(lines) + "\n"


def cel_chain(size: int) -> str:
    lines = ["name: chain", "inputs:", "  topic: {type: string, default: x}", "steps:"]
    lines.append("  - {id: s0, uses: demo.echo, inputs: {topic: inputs.topic}}")
    for index in range(1, size):
        before = f"s{index - 1}"
        lines.append(
            f"  - {{id: s{index}, uses: demo.echo, depends_on: [{before}],"
            f" when: \"steps.{before}.status == 'SUCCEEDED'\","
            f" inputs: {{previous: steps.{before}.outputs}}}}"
        )
    return "\n".join(lines) + "\n"


def timed(action: Callable[..., object], *args: object) -> tuple[float, float]:
    """(wall s, CPU s) of ``action(*args)``, from a collected heap."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    action(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def load_times() -> None:
    print("1. Load time of a chain (YAML, step checks, graph checks):")
    print(
        f"  {'shape':<8} {'steps':>6}  {'wall s':>7}  {'CPU s':>6}  {'CPU µs/step':>11}  {'vs 1k':>6}"
    )
    for name, build in (("plain", plain_chain), ("with CEL", cel_chain)):
        first: float | None = None
        for size in SIZES:
            wall, cpu = timed(load_workflow_text, build(size), "chain.yaml")
            per_step = cpu / size
            first = first or per_step
            print(
                f"  {name:<8} {size:>6}  {wall:>7.2f}  {cpu:>6.2f}  {per_step * 1e6:>11.0f}"
                f"  {per_step / first:>5.2f}x"
            )


def _reads(wf: WorkflowDefinition) -> list[tuple[str, str]]:
    """Each step reads the one before it."""
    return [(later.id, earlier.id) for earlier, later in zip(wf.steps, wf.steps[1:])]


def ancestor_sets(wf: WorkflowDefinition) -> None:
    graph = WorkflowGraph(wf)
    visible = {step.id: graph.visible_from(step.id) for step in wf.steps}
    assert all(other in visible[step] for step, other in _reads(wf))


def bit_sets(wf: WorkflowDefinition) -> None:
    graph = WorkflowGraph(wf)
    assert all(graph.can_read(step, other) for step, other in _reads(wf))


def side_by_side() -> None:
    print("2. The graph stage's visibility question for every step, side by side (CPU s):")
    print(f"  {'steps':>6}  {'ancestor sets':>13}  {'bit sets':>8}  {'ratio':>6}")
    for size in SIDE_BY_SIDE_SIZES:
        wf = load_workflow_text(plain_chain(size), source="chain.yaml")
        _, before = timed(ancestor_sets, wf)
        _, after = timed(bit_sets, wf)
        print(f"  {size:>6}  {before:>13.3f}  {after:>8.3f}  {before / after:>5.0f}x")


def defined_tables(graph: WorkflowGraph) -> None:
    under_way = [(edge.target, edge.source) for edge in graph.detour_edges]
    for detour in (None, *under_way):
        defined_guards(graph, detour)


SHAPES = (("chain", False, False), ("read outside", True, False), ("crossed", True, True))
"""The readiness tables' shapes: a chain of loops with detours; each loop's body also read from
outside; and that behind two loops read from outside into each other (possible waits in a
cycle)."""


def readiness_tables() -> None:
    print("3. Readiness tables of a chain of loops, each with a detour (CPU s); read from outside:")
    print("   each loop's body also read by a step outside it (its router not upstream of it)")
    print("   crossed: behind two loops whose outside readers feed each other's body (a cycle)")
    print(
        f"  {'shape':<13} {'steps':>6}  {'loops':>5}  {'detours':>7}  {'CPU s':>6}  {'µs/step':>7}"
        f"  {'vs first':>8}"
    )
    for name, readers, crossed in SHAPES:
        first: float | None = None
        for segments in LOOP_SEGMENTS:
            graph = WorkflowGraph(chain(segments, readers, crossed))
            _, cpu = timed(_build_tables, graph)
            per_step = cpu / len(graph.workflow.steps)
            first = first or per_step
            print(
                f"  {name:<13} {len(graph.workflow.steps):>6}  {len(graph.loop_edges):>5}"
                f"  {len(graph.detour_edges):>7}  {cpu:>6.2f}  {per_step * 1e6:>7.0f}"
                f"  {per_step / first:>7.2f}x"
            )
    print(f"  {'shape':<13} {'steps':>6}  {'definition':>10}  {'tables':>6}  {'ratio':>6}  (CPU s)")
    for name, readers, crossed in SHAPES:
        for segments in DEFINED_SEGMENTS:
            graph = WorkflowGraph(chain(segments, readers, crossed))
            _, before = timed(defined_tables, graph)
            _, after = timed(_build_tables, WorkflowGraph(chain(segments, readers, crossed)))
            steps = len(graph.workflow.steps)
            print(
                f"  {name:<13} {steps:>6}  {before:>10.3f}  {after:>6.3f}  {before / after:>5.0f}x"
            )


def configured_chain(size: int) -> str:
    """A chain whose steps each have a timeout and a config of a few numbers."""
    lines = ["name: chain", "inputs:", "  x: {type: float, default: 1.5, choices: [1.5, 2.5]}"]
    lines += ["steps:", "  - {id: s0, uses: demo.echo}"]
    lines += [
        f"  - {{id: s{i}, uses: demo.echo, depends_on: [s{i - 1}], timeout_s: 5.0,"
        f" config: {{weight: 0.5, tags: [a, b], limits: {{low: 1.0, high: 2}}}}}}"
        for i in range(1, size)
    ]
    return "\n".join(lines) + "\n"


def dumped_and_walked(wf: WorkflowDefinition) -> list[tuple[str, ...]]:
    """The check before: the whole definition dumped (each step too) and every value walked."""
    data = wf.model_dump(exclude={"locations", "source", "steps"})
    data["steps"] = {step.id: step.model_dump() for step in wf.steps}
    stack: list[tuple[tuple[str, ...], Any]] = [((), data)]
    found: list[tuple[str, ...]] = []
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*path, str(key)), child) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend(((*path, str(index)), child) for index, child in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            found.append(path)
    return found


def free_form_walked(root: Node) -> Problems:
    """The check now, but for the models' own refusal: the free-form values walked as read."""
    problems = Problems("chain.yaml")
    check_finite_inputs(problems, root.get("inputs"))
    steps = root.get("steps")
    assert steps is not None
    for step in steps.value:
        check_finite(problems, step.get("config"), "config")
    return problems


def finite_check() -> None:
    print(f"4. The finite-number check of a {FINITE_SIZE:,}-step chain with configs (CPU s):")
    text = configured_chain(FINITE_SIZE)
    root = YamlReader(Problems("chain.yaml")).read(text)
    assert root is not None
    _, load = timed(load_workflow_text, text, "chain.yaml")
    wf = load_workflow_text(text, "chain.yaml")
    _, dumped = timed(dumped_and_walked, wf)
    _, walked = timed(free_form_walked, root)
    before = load - walked + dumped
    print(
        f"  {'check before':>12}  {'check now':>9}  {'ratio':>6}  {'load before':>11}  {'load now':>8}  {'ratio':>6}"
    )
    print(
        f"  {dumped:>12.3f}  {walked:>9.3f}  {dumped / walked:>5.0f}x  {before:>11.3f}"
        f"  {load:>8.3f}  {before / load:>5.2f}x"
    )


def main() -> None:
    load_times()
    side_by_side()
    readiness_tables()
    finite_check()


if __name__ == "__main__":
    main()
