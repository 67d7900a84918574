"""Shared pieces for the agent tests: a registry written as YAML, test tools, a scripted model.

The registry is loaded through the real loader and its agents registered in a
private step registry, so nothing here shows in the process-wide one. The
scripted model is a ``ModelCaller`` answering each ``ModelCall`` with a
function of it (by default the built-in model's deterministic answer), and
records every call it really receives — a replayed call never reaches it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents.builtin_model import orchestrate_reply, react_reply
from agents.port import ORCHESTRATE_TASK, DirectPort, ModelCall
from agents.registration import register_agents
from agents.registry import Registry
from agents.registry_loader import load_registry_text
from agents.services import AgentServices
from agents.tools import TOOL_IMPLEMENTATIONS, tool_implementation
from engine.context import CallUsage, StepContext, StepInfo
from engine.events import RunEvent
from engine.kahn import KahnEngine
from engine.loader import load_workflow_text
from engine.protocol import ExecutionResult, InterruptResponder, RunContext
from engine.services import ServiceRegistry
from engine.spec import WorkflowDefinition
from engine.steps import StepRegistry
from engine.store import RunStore
from tests.engine.kahn_helpers import CallCounter

REGISTRY_YAML = """\
models:
  builtin: {provider: builtin, price_per_1k_tokens: 0}
  remote: {tier: 2, price_per_1k_tokens: 1.0}
tools:
  lookup:
    description: Looks a topic up.
    input:
      topic: {type: string, required: true}
    runs: test.count
  write_file:
    description: Writes a file.
    input:
      text: {type: string, required: true}
    runs: test.count
    side_effect: writes
  post_web:
    description: Posts to the web.
    input:
      text: {type: string, required: true}
    runs: test.count
    side_effect: external
  explode:
    description: Always fails.
    runs: test.fail
agents:
  alpha:
    role: Looks things up.
    tools: [lookup, write_file, post_web, explode]
    model: builtin
    output:
      topic: {type: string, required: true}
    max_iterations: 4
  beta:
    role: Writes.
    tools: [lookup]
    model: builtin
    output:
      topic: {type: string, required: true}
    context: {requires: [alpha]}
  gamma:
    role: Optional extra.
    model: builtin
    output:
      note: {type: string}
  secret:
    role: Handles data that may not leave the machine.
    tools: [lookup]
    model: remote
    local_only: true
    output:
      topic: {type: string}
  tight:
    role: Has a small token allowance.
    tools: [lookup]
    model: builtin
    max_tokens: 15
    output:
      topic: {type: string}
  pricey:
    role: Uses a priced model.
    tools: [lookup]
    model: remote
    output:
      topic: {type: string}
  boss:
    role: Orchestrates.
    model: builtin
    output:
      done: {type: bool}
"""

ADVISORY_WORKFLOW = """\
name: advice
mode: advisory
inputs:
  topic: {type: string, required: true}
advisory:
  orchestrator: boss
  required_agents: [alpha, beta]
  optional_agents: [gamma]
  suggested_sequence: [alpha, gamma, beta]
  skip_when:
    gamma: "inputs.topic == 'skip'"
  max_iterations: 6
outputs:
  topic: "steps.orchestrator.outputs.agents.beta.topic"
"""


@tool_implementation("test.count")
async def count(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    """Echoes its arguments; each real execution appends a line to the run's
    :class:`~tests.engine.kahn_helpers.CallCounter`, when it has one.

    With ``AGENT_CRASH_BLOCK=N`` in the environment, the execution after the N-th
    writes ``<counter>.blocked`` and blocks forever (a test kills the process there).
    """
    counter = ctx.services.app.get(CallCounter)
    if counter is not None:
        path = counter.path
        block_after = int(os.environ.get("AGENT_CRASH_BLOCK", "0"))
        if block_after and len(path.read_text().splitlines()) >= block_after:
            path.with_suffix(".blocked").touch()
            await asyncio.Event().wait()
        with path.open("a") as handle:
            handle.write(f"{ctx.step_id}#{ctx.next_call_index - 1}:{sorted(args.items())}\n")
    return {"topic": args.get("topic") or args.get("text"), "seen": args}


@tool_implementation("test.fail")
async def fail(ctx: StepContext, args: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("the tool broke")


def make_registry(extra_yaml: str = "") -> Registry:
    loaded = load_registry_text(
        REGISTRY_YAML + extra_yaml, "reg.yaml", TOOL_IMPLEMENTATIONS.names()
    )
    assert not loaded.problems, loaded.problems
    return loaded.registry


def steps_for(registry: Registry) -> StepRegistry:
    steps = StepRegistry()
    register_agents(registry, steps)
    return steps


def builtin_answer(call: ModelCall) -> Any:
    if call.task == ORCHESTRATE_TASK:
        return orchestrate_reply(call.inputs)
    return react_reply(call.inputs)


class ScriptedModel:
    """A ModelCaller: ``script(call)`` answers each ModelCall; ``calls`` are those really made."""

    def __init__(
        self,
        script: Callable[[ModelCall], Any] = builtin_answer,
        tokens: int = 10,
        counter: Path | None = None,
    ):
        self.script = script
        self.tokens = tokens
        self.counter = counter
        """A file each real call appends ``task:agent:iteration`` to (for crash tests)."""
        self.calls: list[ModelCall] = []

    async def complete(self, request: Any, step: StepInfo) -> dict[str, Any]:
        assert isinstance(request, ModelCall)
        self.calls.append(request)
        if self.counter is not None:
            who = request.inputs.get("agent", "orchestrator")
            with self.counter.open("a") as handle:
                handle.write(f"{request.task}:{who}:{request.inputs['iteration']}\n")
        return {"answer": self.script(request)}

    def encode(self, response: Any) -> dict[str, Any]:
        return dict(response)

    def decode(self, request: Any, data: dict[str, Any]) -> dict[str, Any]:
        return data

    def usage(self, response: Any) -> CallUsage:
        return CallUsage(tokens=self.tokens, provider="scripted")


class AnswerPort(DirectPort):
    """The DirectPort with the scripted model's envelope unwrapped."""

    def request(self, call: ModelCall, schema: type[Any]) -> ModelCall:
        return call

    def answer(self, response: Any) -> Any:
        return response["answer"]

    def is_local(self, profile: Any) -> bool:
        return bool(profile.provider == "builtin")


def load(text: str, steps: StepRegistry) -> WorkflowDefinition:
    return load_workflow_text(text, source="wf.yaml", registry=steps)


async def run_workflow(
    wf: WorkflowDefinition,
    steps: StepRegistry,
    store: RunStore,
    model: ScriptedModel,
    *,
    inputs: dict[str, Any] | None = None,
    responder: InterruptResponder | None = None,
    services: Sequence[object] = (),
    engine: Any = None,
) -> tuple[ExecutionResult, list[RunEvent]]:
    """``services``: provided after ``AgentServices(port=AnswerPort())``, which an
    ``AgentServices`` among them replaces."""
    context = RunContext(
        store=store,
        inputs=inputs or {},
        model=model,
        responder=responder,
        services=ServiceRegistry(AgentServices(port=AnswerPort()), *services),
    )
    result = await (engine or KahnEngine(registry=steps)).execute(wf, context)
    return result, store.events(result.run_id)


def domain(events: list[RunEvent], name: str) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.kind == "domain" and e.name == name]
