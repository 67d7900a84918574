"""A run in its own process, for the interrupt round trip and the kill -9 test.

    python -m tests.engine.langgraph_worker run DB ENGINE WORKFLOW COUNTER RUN_ID
    python -m tests.engine.langgraph_worker resume DB ENGINE RUN_ID COUNTER [ANSWER]

WORKFLOW is ``interrupt`` or ``crash`` (below). Every ``test.lg_counted`` step
makes one journaled "model call" that appends the step id to COUNTER each time
the call really happens. With LG_BLOCK=1 the step ``slow`` blocks forever after
its call — the test kills the process there. The exit code is the run's status
(0 COMPLETED, 4 WAITING, 1 anything else).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from engine import demo_steps  # noqa: F401 - registers the demo steps
from engine.context import InterruptAnswer, InterruptRequest, StepContext
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.loader import load_workflow_text
from engine.protocol import ExecutionEngine, RunContext
from engine.services import ServiceRegistry
from engine.states import RunStatus
from engine.steps import REGISTRY, AnyInput, AnyOutput
from engine.store import RunStore
from tests.engine.kahn_helpers import CallCounter, journaled_counted_call

COUNTER = "lg.counter"

WORKFLOWS = {
    "interrupt": {
        "name": "lg_interrupt",
        "steps": [
            {"id": "ask", "uses": "test.lg_counted", "config": {"ask": True}},
            {"id": "side", "uses": "test.lg_counted"},
            {"id": "after", "uses": "demo.gather", "depends_on": ["ask", "side"]},
        ],
        "outputs": {"answer": "steps.ask.outputs.answer", "model": "steps.ask.outputs.model"},
    },
    "crash": {
        "name": "lg_crash",
        "steps": [
            {"id": "first", "uses": "test.lg_counted"},
            {"id": "fast", "uses": "test.lg_counted", "depends_on": ["first"]},
            {
                "id": "slow",
                "uses": "test.lg_counted",
                "depends_on": ["first"],
                "config": {"block": True},
            },
            {"id": "join", "uses": "test.lg_counted", "depends_on": ["fast", "slow"]},
        ],
    },
}


async def counted(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """One journaled call, counted in a file when it really happens; then maybe ask or block."""
    model = await journaled_counted_call(ctx, f"model answer for {ctx.step_id}")
    if ctx.config.get("block") and os.environ.get("LG_BLOCK") == "1":
        await asyncio.Event().wait()
    outputs = {"model": model}
    if ctx.config.get("ask"):
        answer = await ctx.interrupt(
            InterruptRequest(prompt="Go on?", options=["approve", "reject"])
        )
        outputs["answer"] = answer.action
    return AnyOutput(**outputs)


if "test.lg_counted" not in REGISTRY:
    REGISTRY.register("test.lg_counted", counted)


def engine_named(name: str) -> ExecutionEngine:
    return LangGraphEngine() if name == "langgraph" else KahnEngine()


async def main(argv: list[str]) -> int:
    command, db, engine_name = argv[0], Path(argv[1]), argv[2]
    with RunStore(db) as store:
        if command == "run":
            workflow, counter, run_id = argv[3], argv[4], argv[5]
            wf = load_workflow_text(json.dumps(WORKFLOWS[workflow]), source=f"{workflow}.yaml")
            context = RunContext(
                store=store, run_id=run_id, services=ServiceRegistry(CallCounter(Path(counter)))
            )
            result = await engine_named(engine_name).execute(wf, context)
        else:
            run_id, counter = argv[3], argv[4]
            if len(argv) > 5:  # stored, as `workbench resume --answer` stores them
                for pending in store.pending_interrupts(run_id):
                    store.record_answer(pending.interrupt_id, InterruptAnswer(action=argv[5]))  # type: ignore[arg-type]
            context = RunContext(
                store=store,
                run_id=run_id,
                services=ServiceRegistry(CallCounter(Path(counter))),
            )
            result = await engine_named(engine_name).resume(run_id, context)
    print(json.dumps({"run_id": result.run_id, "status": result.status.value}))
    return {RunStatus.COMPLETED: 0, RunStatus.WAITING: 4}.get(result.status, 1)


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main(sys.argv[1:])))
