"""Agent and advisory-mode benchmarks (printed, never asserted).

1. Orchestrator overhead per decision: the time spent in the orchestrator's
   decision (building the offer and the prompt, the journaled model call,
   validating the answer against the offer and the policies, the decision
   event), measured around each decision, against the time the agents it
   invokes take, in the same runs of the test registry's three agents
   (answered by the built-in model's deterministic policies) on SQLite. The
   same agents as a strict workflow of three ``uses: agent.NAME`` steps are
   timed side by side: one advisory step against three engine steps (each with
   its own events and saved state), so the whole-run ratio mixes the engine's
   per-step cost with the orchestrator's.
2. An offline advisory run's time: the shipped research assistant
   (searcher → reader → fact checker → writer over the workspace's default
   corpus) through the real composition root — router with the built-in
   model, corpus retriever, run store — from start to COMPLETED, the corpus
   already indexed (its one-time build is printed apart), with the time its
   decisions took.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path

from agents.advisory import Orchestrator
from engine.kahn import KahnEngine
from engine.store import RunStore
from tests.agents.agent_helpers import (
    ADVISORY_WORKFLOW,
    ScriptedModel,
    load,
    make_registry,
    run_workflow,
    steps_for,
)

STRICT = """\
name: strict
inputs:
  topic: {type: string, required: true}
steps:
  - {id: alpha, uses: agent.alpha, inputs: {topic: "inputs.topic"}}
  - {id: gamma, uses: agent.gamma, depends_on: [alpha], inputs: {topic: "inputs.topic"}}
  - {id: beta, uses: agent.beta, depends_on: [gamma], inputs: {topic: "inputs.topic"}}
"""
SAMPLES = 25
DECISIONS: list[float] = []
"""Seconds each orchestrator decision took, appended by the timing wrapper below."""


def _timed_decisions() -> None:
    decide = Orchestrator._decide

    async def timed(self: Orchestrator, iteration: int) -> tuple[str, str | None]:
        began = time.perf_counter()
        try:
            return await decide(self, iteration)
        finally:
            DECISIONS.append(time.perf_counter() - began)

    Orchestrator._decide = timed  # type: ignore[method-assign]


QUESTION = "How does the json module encode Python objects?"


def _time_runs(text: str, folder: Path) -> tuple[list[float], int]:
    steps = steps_for(make_registry())
    wf = load(text, steps)
    times: list[float] = []
    decisions = 0
    for index in range(SAMPLES):
        gc.collect()
        with RunStore(folder / f"{wf.name}-{index}.sqlite") as store:
            started = time.perf_counter()
            _, events = asyncio.run(
                run_workflow(wf, steps, store, ScriptedModel(), inputs={"topic": "owls"})
            )
            times.append(time.perf_counter() - started)
        decisions = sum(1 for e in events if e.kind == "domain" and e.name == "advisory.decision")
    return times, decisions


def orchestrator_overhead() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        strict, _ = _time_runs(STRICT, Path(tmp))
        DECISIONS.clear()
        advisory, decisions = _time_runs(ADVISORY_WORKFLOW, Path(tmp))
    s, a = statistics.median(strict), statistics.median(advisory)
    per_decision = statistics.median(DECISIONS)
    share = sum(DECISIONS) / (sum(advisory))
    print(f"same 3 agents, median of {SAMPLES} runs on SQLite:")
    print(f"  strict workflow, 3 agent steps       {s * 1000:8.2f} ms")
    print(
        f"  advisory workflow, {decisions} decisions      {a * 1000:8.2f} ms  ({a / s:.2f}x strict)"
    )
    print(
        f"  orchestrator overhead per decision   {per_decision * 1000:8.3f} ms median,"
        f" {statistics.mean(DECISIONS) * 1000:.3f} ms mean ({share:.0%} of the advisory runs)"
    )


def offline_advisory_run() -> None:
    from tui.launch.run import open_run
    from tui.launch.steps import load_workflow_file
    from tui.launch.wiring import open_corpus
    from tui.launch.workspace import Workspace
    from workflows import WORKFLOWS_DIR

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Workspace.at(tmp)
        wf = load_workflow_file(WORKFLOWS_DIR / "research_assistant.yaml", workspace)
        started = time.perf_counter()
        open_corpus(workspace).close()
        print(f"default corpus built once in {time.perf_counter() - started:.1f} s (not counted)")

        async def one() -> tuple[float, str]:
            async with open_run(workspace, wf, inputs={"question": QUESTION}) as opened:
                began = time.perf_counter()
                result = await KahnEngine().execute(wf, opened.context)
                return time.perf_counter() - began, result.status.value

        DECISIONS.clear()
        samples = [asyncio.run(one()) for _ in range(5)]
    times = [t for t, _ in samples]
    statuses = {s for _, s in samples}
    print(
        f"offline advisory research assistant: median {statistics.median(times) * 1000:.0f} ms,"
        f" min {min(times) * 1000:.0f} ms over {len(times)} runs ({', '.join(sorted(statuses))});"
        f" a decision through the router's built-in model: median"
        f" {statistics.median(DECISIONS) * 1000:.2f} ms"
    )


def main() -> None:
    _timed_decisions()
    orchestrator_overhead()
    offline_advisory_run()


if __name__ == "__main__":
    main()
