"""Agents as steps: ``uses: agent.NAME`` and the advisory orchestrator in the step registry.

The loader checks ``uses`` against the step registry, so registering every
registry agent as the step ``agent.NAME`` is all a workflow needs to use one;
its output model is the agent's declared output, so a malformed final answer
fails the step with the validation error like any other step.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agents.advisory import (
    ORCHESTRATOR_STEP,
    ORCHESTRATOR_STEP_ID,
    check_advisory,
    run_orchestrator,
)
from agents.react import AgentKit, AgentLoop
from agents.registry import AGENT_PREFIX, Registry
from engine.context import StepContext
from engine.steps import REGISTRY, AnyInput, AnyOutput, SectionProblems, StepRegistry, WorkflowMode


class AgentIncomplete(RuntimeError):
    """An agent ended without an output its schema accepts."""


def _agent_step(registry: Registry, name: str) -> Any:
    output_model = registry.output_models[name]

    async def run_agent(ctx: StepContext, inp: AnyInput) -> BaseModel:
        kit = AgentKit.for_step(ctx, registry)
        loop = AgentLoop(ctx, kit, name, inp.model_dump(), dict(ctx.upstream))
        result = await loop.run()
        try:
            return output_model.model_validate(result.output)
        except ValueError as error:
            raise AgentIncomplete(
                f"agent {name} ended {result.status} ({result.reason}) without a valid output: "
                f"{str(error).splitlines()[0]}"
            ) from None

    run_agent.__annotations__ = {"ctx": StepContext, "inp": AnyInput, "return": output_model}
    run_agent.__doc__ = registry.agent(name).role
    return run_agent


def _orchestrator_step(registry: Registry) -> Any:
    async def orchestrate(ctx: StepContext, inp: AnyInput) -> AnyOutput:
        outputs = await run_orchestrator(ctx, registry).run()
        return AnyOutput.model_validate(outputs)

    orchestrate.__annotations__ = {"ctx": StepContext, "inp": AnyInput, "return": AnyOutput}
    orchestrate.__doc__ = "Advisory mode: decides which agent runs next."
    return orchestrate


def _check_advisory_section(section: Any, steps: StepRegistry) -> SectionProblems:
    agents = {n.removeprefix(AGENT_PREFIX) for n in steps.names() if n.startswith(AGENT_PREFIX)}
    return check_advisory(section, agents)[1]


ADVISORY_MODE = WorkflowMode(
    step_id=ORCHESTRATOR_STEP_ID,
    uses=ORCHESTRATOR_STEP,
    section_keys="orchestrator, required_agents, optional_agents, suggested_sequence, completion",
    runs_instead="its orchestrator invokes the agents in 'advisory'",
    check=_check_advisory_section,
)
"""``mode: advisory``: the ``advisory`` section becomes the orchestrator's step."""


def register_agents(registry: Registry, steps: StepRegistry = REGISTRY) -> None:
    """Register ``agent.NAME`` for every agent, the advisory orchestrator and its mode."""
    for name in registry.agents:
        steps.register(f"{AGENT_PREFIX}{name}", _agent_step(registry, name))
    steps.register(ORCHESTRATOR_STEP, _orchestrator_step(registry))
    steps.register_mode("advisory", ADVISORY_MODE)
