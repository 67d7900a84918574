"""Random workflow DAGs for the conformance suite and the engine benchmark.

A :class:`DagCase` is a small DAG of zero-work steps: edges only from a lower to
a higher index, per step a trigger rule, a ``when`` that may be false, a step
that may fail, and at most one loop (``routing.loop`` from a step back to an
ancestor, capped). :func:`expected_statuses` is the third oracle: a small pure
function of the case that says which steps succeed, fail, fail upstream or are
skipped, without any engine.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from engine import demo_steps  # noqa: F401 - registers the demo steps the cases use
from engine.canonical import CanonicalRun, canonical_run
from engine.graph import WorkflowGraph
from engine.loader import load_workflow_text
from engine.protocol import ExecutionEngine, ExecutionResult, RunContext
from engine.spec import WorkflowDefinition

WORKFLOWS = Path(__file__).resolve().parents[2] / "workflows"
TRIGGERS = (
    "all_success",
    "all_done",
    "none_failed",
    "none_failed_min_one_success",
    "one_success",
    "one_failed",
)


def demo_workflows() -> list[Path]:
    """Every shipped workflow made of built-in demo steps (deep_research needs the
    research package's model and corpus and is covered by the research suite)."""
    found = []
    for path in sorted(WORKFLOWS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        uses = [step.get("uses", "") for step in data.get("steps", []) if "uses" in step]
        if uses and all(u.startswith("demo.") for u in uses) and "templates" not in data:
            found.append(path)
    return found


@dataclass(frozen=True)
class DagCase:
    size: int
    deps: tuple[tuple[int, ...], ...]
    """Per step, the indexes it depends on (all lower)."""
    triggers: tuple[str, ...]
    when_false: frozenset[int] = frozenset()
    failing: frozenset[int] = frozenset()
    loop: tuple[int, int, int] | None = None
    """(router, target, max_iterations): the router loops back to the target."""
    sleep_s: Mapping[int, float] = field(default_factory=dict)
    """Per step, seconds of simulated work (benchmarks only; tests keep zero work)."""

    def step_id(self, index: int) -> str:
        return f"s{index}"

    def definition(self) -> dict[str, Any]:
        steps: list[dict[str, Any]] = []
        for index in range(self.size):
            spec: dict[str, Any] = {"id": self.step_id(index), "trigger": self.triggers[index]}
            if index in self.failing:
                spec["uses"] = "demo.fail"
                spec["config"] = {"message": f"s{index} fails on purpose"}
            elif index in self.sleep_s:
                spec["uses"] = "demo.sleep"
                spec["config"] = {"seconds": self.sleep_s[index]}
            elif self.deps[index]:
                spec["uses"] = "demo.gather"
            else:
                spec["uses"] = "demo.echo"
                spec["config"] = {"set": {"v": index}}
            if self.deps[index]:
                spec["depends_on"] = [self.step_id(d) for d in self.deps[index]]
            if index in self.when_false:
                spec["when"] = "false"
            if self.loop is not None and self.loop[0] == index:
                router, target, cap = self.loop
                spec["routing"] = {
                    "kind": "loop",
                    "loop": {"target": self.step_id(target), "max_iterations": cap},
                }
            steps.append(spec)
        return {"name": "random_dag", "steps": steps}

    def yaml_text(
        self, order: Sequence[int] | None = None, extra_steps: Sequence[dict[str, Any]] = ()
    ) -> str:
        """The definition as YAML text (JSON is YAML), steps declared in ``order``."""
        data = self.definition()
        steps = data["steps"]
        if order is not None:
            steps = [steps[i] for i in order]
        data["steps"] = [*steps, *extra_steps]
        return json.dumps(data, indent=1)

    def workflow(
        self, order: Sequence[int] | None = None, extra_steps: Sequence[dict[str, Any]] = ()
    ) -> WorkflowDefinition:
        return load_workflow_text(self.yaml_text(order, extra_steps), source="random_dag.yaml")


def _descendants(case: DagCase, index: int) -> set[int]:
    children: dict[int, set[int]] = {i: set() for i in range(case.size)}
    for child, parents in enumerate(case.deps):
        for parent in parents:
            children[parent].add(child)
    seen: set[int] = set()
    stack = [index]
    while stack:
        for child in children[stack.pop()]:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def loop_allowed(case: DagCase, router: int, target: int) -> bool:
    """A loop whose body is closed: nothing outside the body hangs off a body step but the router.

    (A step that depends on a body step while the body may run again would read
    whichever pass happened to be latest — a race on any scheduler, so the
    generator does not make one.)
    """
    if target != router and router not in _descendants(case, target):
        return False
    body = {target, router} | (
        _descendants(case, target)
        & {a for a in range(case.size) if router in _descendants(case, a)}
    )
    for child, parents in enumerate(case.deps):
        if child in body:
            continue
        if any(parent in body and parent != router for parent in parents):
            return False
    return True


def trigger_outcome(rule: str, upstream: Sequence[str]) -> str:
    """RUN, SKIPPED or UPSTREAM_FAILED for settled upstream statuses (Airflow's meanings)."""
    if not upstream:
        return "RUN"
    success = sum(s == "SUCCEEDED" for s in upstream)
    failed = sum(s in ("FAILED", "UPSTREAM_FAILED") for s in upstream)
    skipped = sum(s == "SKIPPED" for s in upstream)
    if rule == "all_done":
        return "RUN"
    if rule == "all_success":
        return "UPSTREAM_FAILED" if failed else "SKIPPED" if skipped else "RUN"
    if rule == "none_failed":
        return "UPSTREAM_FAILED" if failed else "RUN"
    if rule == "none_failed_min_one_success":
        return "UPSTREAM_FAILED" if failed else "RUN" if success else "SKIPPED"
    if rule == "one_success":
        return "RUN" if success else "UPSTREAM_FAILED" if failed else "SKIPPED"
    if rule == "one_failed":
        return "RUN" if failed else "SKIPPED"
    raise ValueError(f"unknown trigger rule {rule!r}")


def expected_statuses(case: DagCase) -> dict[str, str]:
    """The final status of every step, computed without an engine.

    Zero-work steps are deterministic, so a loop's last pass settles its body
    exactly as the first did: the loop changes iterations, never statuses.
    """
    statuses: dict[int, str] = {}
    for index in range(case.size):
        outcome = trigger_outcome(case.triggers[index], [statuses[d] for d in case.deps[index]])
        if outcome != "RUN":
            statuses[index] = outcome
        elif index in case.when_false:
            statuses[index] = "SKIPPED"
        elif index in case.failing:
            statuses[index] = "FAILED"
        else:
            statuses[index] = "SUCCEEDED"
    return {case.step_id(i): s for i, s in statuses.items()}


def expected_skipped(case: DagCase) -> set[str]:
    return {step for step, status in expected_statuses(case).items() if status == "SKIPPED"}


@st.composite
def dag_cases(draw: st.DrawFn, max_size: int = 7) -> DagCase:
    size = draw(st.integers(min_value=1, max_value=max_size))
    deps = tuple(
        tuple(parent for parent in range(index) if draw(st.booleans())) for index in range(size)
    )
    triggers = tuple(draw(st.sampled_from(TRIGGERS)) for _ in range(size))
    when_false = frozenset(i for i in range(size) if draw(st.integers(0, 5)) == 0)
    failing = frozenset(i for i in range(size) if draw(st.integers(0, 5)) == 0)
    case = DagCase(size=size, deps=deps, triggers=triggers, when_false=when_false, failing=failing)
    if draw(st.booleans()):
        router = size - 1 if draw(st.booleans()) else draw(st.integers(0, size - 1))
        ancestors = sorted(a for a in range(router) if router in _descendants(case, a))
        target = (
            draw(st.sampled_from(ancestors)) if ancestors and draw(st.integers(0, 3)) else router
        )
        cap = draw(st.integers(1, 3))
        if loop_allowed(case, router, target):
            case = DagCase(
                size=size,
                deps=deps,
                triggers=triggers,
                when_false=when_false,
                failing=failing,
                loop=(router, target, cap),
            )
    return case


def random_case(rng: random.Random, size: int, edge_probability: float, sleep_s: float) -> DagCase:
    """A benchmark DAG: every step does ``sleep_s`` of work (scaled at random), no failures."""
    deps = tuple(tuple(p for p in range(i) if rng.random() < edge_probability) for i in range(size))
    work = {i: round(sleep_s * rng.uniform(0.5, 1.5), 4) for i in range(size)}
    return DagCase(
        size=size, deps=deps, triggers=tuple("all_success" for _ in range(size)), sleep_s=work
    )


async def run_case(
    engine: ExecutionEngine, wf: WorkflowDefinition, store: Any, **context: Any
) -> tuple[ExecutionResult, CanonicalRun]:
    result = await engine.execute(wf, RunContext(store=store, **context))
    return result, canonical_of(wf, store, result.run_id)


def canonical_of(
    wf: WorkflowDefinition, store: Any, run_id: str, *, interrupts: bool = True
) -> CanonicalRun:
    graph = WorkflowGraph(wf)
    dependencies = {step_id: graph.dependencies(step_id) for step_id in wf.step_ids}
    return canonical_run(store.events(run_id), dependencies, interrupts=interrupts)
