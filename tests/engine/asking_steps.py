"""A test step that makes a journaled model call and then asks a person: counts its calls, so
a test can show a resumed run took the call from the journal."""

from __future__ import annotations

from collections import Counter

from engine.context import InterruptRequest, StepContext
from engine.steps import AnyInput, AnyOutput
from tests.engine.kahn_helpers import TEST_REGISTRY

ASK_AFTER_A_CALL = "test.ask_after_a_call"
CALLS: Counter[str] = Counter()
"""Model calls made, per run id."""


async def ask_after_a_call(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    async def call() -> str:
        CALLS[ctx.run_id] += 1
        return "the model's answer"

    model, _ = await ctx.journaled("llm", call)
    answer = await ctx.interrupt(InterruptRequest(prompt="Go on?"))
    return AnyOutput(model=model, answer=answer.action)


if ASK_AFTER_A_CALL not in TEST_REGISTRY:
    TEST_REGISTRY.register(ASK_AFTER_A_CALL, ask_after_a_call)
