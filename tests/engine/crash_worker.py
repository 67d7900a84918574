"""A run to kill: executed in a subprocess by test_resume.py, then killed with SIGKILL.

``python -m tests.engine.crash_worker DB RUN_ID COUNTER`` runs the workflow below
on the SQLite store DB. Step ``slow`` makes one journaled call (appending a line
to COUNTER each time the call really happens), then blocks forever when the
environment says CRASH_BLOCK=1 — the test kills the process there.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from engine.context import StepContext
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.services import ServiceRegistry
from engine.steps import AnyInput, AnyOutput
from engine.store import RunStore
from tests.engine.kahn_helpers import (
    TEST_REGISTRY,
    CallCounter,
    journaled_counted_call,
    step,
    workflow,
)


async def counted_call(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    """One journaled call whose real execution is counted in a file; then maybe block."""
    answer = await journaled_counted_call(ctx, f"answer for {ctx.step_id}")
    if ctx.config.get("block") and os.environ.get("CRASH_BLOCK") == "1":
        await asyncio.Event().wait()
    return AnyOutput(answer=answer)


if "test.counted_call" not in TEST_REGISTRY:
    TEST_REGISTRY.register("test.counted_call", counted_call)

WORKFLOW = workflow(
    step("first", "test.counted_call"),
    step("quick", "test.counted_call", depends_on=["first"]),
    step("slow", "test.counted_call", depends_on=["first"], config={"block": True}),
    step("last", "test.counted_call", depends_on=["quick", "slow"]),
    name="crash_demo",
)


def context(store: RunStore, run_id: str, counter: str) -> RunContext:
    return RunContext(
        store=store, run_id=run_id, services=ServiceRegistry(CallCounter(Path(counter)))
    )


def main(db: str, run_id: str, counter: str) -> None:
    store = RunStore(db)
    asyncio.run(
        KahnEngine(registry=TEST_REGISTRY).execute(WORKFLOW, context(store, run_id, counter))
    )


if __name__ == "__main__":
    main(*sys.argv[1:4])
