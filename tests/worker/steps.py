"""Steps the worker tests' workers import (``workbench worker --import tests.worker.steps``).

``test.call_then_wait`` makes one journaled "model call" — appending ``run step iteration
pid`` to the file named by ``$WORKBENCH_TEST_CALLS``, so a test counts the calls really made
and by which process — then waits ``config.seconds`` (I/O-bound work). ``test.busy`` spins the
CPU for ``config.seconds`` in pure Python. ``test.ask`` makes a journaled call, then asks a
person.
"""

from __future__ import annotations

import asyncio
import os
import time

from engine.context import InterruptRequest, StepContext
from engine.steps import REGISTRY, AnyInput, AnyOutput

CALLS_ENV = "WORKBENCH_TEST_CALLS"


def _record_call(ctx: StepContext) -> str:
    line = f"{ctx.run_id} {ctx.step_id} {ctx.iteration} {os.getpid()}\n"
    with open(os.environ[CALLS_ENV], "a", encoding="utf-8") as calls:
        calls.write(line)
    return f"answer for {ctx.step_id}"


async def call_then_wait(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    async def call() -> str:
        return _record_call(ctx)

    answer, _ = await ctx.journaled("llm", call)
    await asyncio.sleep(float(ctx.config.get("seconds", 0.2)))
    return AnyOutput(answer=answer)


async def busy(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    deadline = time.monotonic() + float(ctx.config.get("seconds", 1.0))
    spins = 0
    while time.monotonic() < deadline:
        spins += sum(range(1000)) and 1
    return AnyOutput(spins=spins)


async def ask(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    async def call() -> str:
        return _record_call(ctx)

    answer, _ = await ctx.journaled("llm", call)
    given = await ctx.interrupt(InterruptRequest(prompt="Go on?"))
    return AnyOutput(answer=answer, given=given.action)


for _name, _step in (
    ("test.call_then_wait", call_then_wait),
    ("test.busy", busy),
    ("test.ask", ask),
):
    if _name not in REGISTRY:
        REGISTRY.register(_name, _step)
