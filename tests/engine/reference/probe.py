"""``ref.probe``: the one step implementation generated workflows use.

Deterministic from its config, iteration, attempt and what it can see, so the
reference interpreter can compute its outputs without running it:

* ``v``: ``config.value``; ``n``: the iteration; ``x``: the ``x`` input if given;
* ``status``: ``config.statuses[iteration % len]`` (a branch key), default ``"OK"``;
* ``seen``: which of its ``depends_on`` steps have outputs in ``ctx.upstream``;
* ``terminate``: true on iteration ``config.terminate_at``;
* fails its first ``config.fail_times`` attempts on every pass from iteration
  ``config.fail_from`` (default 0) on.
"""

from __future__ import annotations

from typing import Any

from engine.context import StepContext
from engine.steps import AnyInput, AnyOutput
from tests.engine.kahn_helpers import TEST_REGISTRY


class ProbeFailure(RuntimeError):
    """The failure a probe raises on purpose."""


def probe_outputs(
    config: dict[str, Any], iteration: int, seen: list[str], x: Any = None
) -> dict[str, Any]:
    statuses = config.get("statuses") or ["OK"]
    outputs: dict[str, Any] = {
        "v": config.get("value", 0),
        "n": iteration,
        "status": statuses[iteration % len(statuses)],
        "seen": sorted(seen),
        "terminate": config.get("terminate_at") == iteration,
    }
    if x is not None:
        outputs["x"] = x
    return outputs


def probe_fails(config: dict[str, Any], iteration: int, attempt: int) -> bool:
    return iteration >= int(config.get("fail_from", 0)) and attempt <= int(
        config.get("fail_times", 0)
    )


async def probe(ctx: StepContext, inp: AnyInput) -> AnyOutput:
    if probe_fails(ctx.config, ctx.iteration, ctx.attempt):
        raise ProbeFailure(f"{ctx.step_id} fails on purpose (attempt {ctx.attempt})")
    seen = [d for d in ctx.spec.depends_on if d in ctx.upstream]
    extra = inp.model_extra or {}
    return AnyOutput(**probe_outputs(ctx.config, ctx.iteration, seen, extra.get("x")))


TEST_REGISTRY.register("ref.probe", probe)
