"""One agent's bounded ReAct loop (ADR-002 §1, §9, §12): think → act → observe.

Each iteration compiles the agent's context under its token budget, checks
the model call against the policies, asks the model (``StepContext.llm``, so
the call is journaled) for a thought and an action, and then either accepts
the final output — validated against the agent's declared output schema — or
checks and runs one tool (``StepContext.journaled``), whose result, error or
refusal is the next observation. Every call out is journaled, so a step that
runs again replays the trail without calling anything twice.

Bounds: ``max_iterations`` model turns and ``max_tokens`` over them; at the
bound the agent completes with what its observations hold (tier 3) and says
so. A run limit (``BudgetExceeded``) is not caught: it ends the run PARTIAL.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from agents.context_compile import compile_context
from agents.governance import Governance, Ledger, Refusal
from agents.port import REACT_TASK, AgentReply, ModelCall, ModelPort, read_answer
from agents.registry import AgentDef, Registry
from agents.schema import describe
from agents.services import AgentServices
from agents.tools import TOOL_IMPLEMENTATIONS, ToolImplementations
from agents.trail import (
    FINISHED,
    OBSERVATION,
    THOUGHT,
    FinishedPayload,
    ObservationPayload,
    ThoughtPayload,
    clip,
)
from engine.context import BudgetExceeded, InterruptRequest, StepContext
from engine.events import PolicyViolation
from plumbing.frozen import Frozen

Status = Literal["completed", "incomplete", "refused"]


class AgentResult(Frozen):
    agent: str
    status: Status
    output: dict[str, Any]
    iterations: int
    tokens: int
    reason: str = ""


@dataclass
class AgentKit:
    """What running agents needs, for one run."""

    registry: Registry
    governance: Governance
    port: ModelPort
    ledger: Ledger
    clock: Callable[[], float]
    tools: ToolImplementations = field(default_factory=lambda: TOOL_IMPLEMENTATIONS)

    @classmethod
    def for_step(cls, ctx: StepContext, registry: Registry) -> AgentKit:
        """The run's kit: the application's :class:`AgentServices` (defaults when it provided
        none, kept for the rest of the run) and the run's own ledger."""
        services = ctx.services.app.setdefault(AgentServices, AgentServices)
        return cls(
            registry,
            Governance(registry),
            services.port,
            services.ledger(ctx.run_id),
            services.clock,
        )


def governed(ctx: StepContext, check: Callable[[], Refusal | None]) -> Refusal | None:
    """A policy decision that replays as it was made: when the journal already holds the
    call this decision guards, the decision is the journal's (a refusal recorded then, or the
    call made then) — not a new check against counters or policy files that have moved on."""
    entry = ctx.services.journal.get(ctx.run_id, ctx.step_id, ctx.iteration, ctx.next_call_index)
    if entry is None:
        return check()
    if entry.kind == "policy":
        return Refusal.model_validate(entry.payload)
    return None


async def record_refusal(ctx: StepContext, refusal: Refusal, agent: str) -> bool:
    """Journal a refusal and, the first time only, emit it as a ``policy_violation``.
    Returns whether it was replayed."""

    async def decide() -> dict[str, Any]:
        return refusal.model_dump()

    _, replayed = await ctx.journaled("policy", decide)
    if replayed or ctx.services.emit_event is None:
        return replayed
    where = f" ({refusal.policy})" if refusal.policy else ""
    ctx.services.emit_event(
        PolicyViolation(
            run_id=ctx.run_id,
            rule=refusal.rule,
            detail=f"{agent}: {refusal.detail}{where}",
            step_id=ctx.step_id,
        )
    )
    return False


def _fill(template: str, task: dict[str, Any]) -> str:
    return re.sub(
        r"\{([a-z_][a-z0-9_]*)\}",
        lambda m: str(task[m.group(1)]) if m.group(1) in task else m.group(0),
        template,
    )


class AgentLoop:
    def __init__(
        self,
        ctx: StepContext,
        kit: AgentKit,
        name: str,
        task: dict[str, Any],
        prior: dict[str, dict[str, Any]],
        invocation: int = 1,
    ) -> None:
        self.ctx = ctx
        self.kit = kit
        self.name = name
        self.agent: AgentDef = kit.registry.agent(name)
        self.task = task
        self.prior = prior
        self.invocation = invocation
        self.output_model: type[BaseModel] = kit.registry.output_models[name]
        self.observations: list[dict[str, Any]] = []
        self.tokens = 0
        self.live = False
        """Whether this invocation did anything new (else it was replayed whole)."""

    # -- events ------------------------------------------------------------------
    def _emit(self, name: str, payload: Frozen, replayed: bool) -> None:
        if not replayed:
            self.live = True
            self.ctx.emit(name, payload.model_dump(mode="json"))

    def _observe(
        self, iteration: int, tool: str | None, observation: dict[str, Any], replayed: bool
    ) -> None:
        if tool is not None:
            observation = {"tool": tool, **observation}
        self.observations.append(observation)
        refused = observation.get("refused_by", "")
        self._emit(
            OBSERVATION,
            ObservationPayload(
                agent=self.name,
                invocation=self.invocation,
                iteration=iteration,
                tool=tool,
                observation=clip(json.dumps(observation, default=str, ensure_ascii=False)),
                refused=str(refused),
            ),
            replayed,
        )

    def _finish(
        self, status: Status, output: dict[str, Any], iterations: int, reason: str
    ) -> AgentResult:
        result = AgentResult(
            agent=self.name,
            status=status,
            output=output,
            iterations=iterations,
            tokens=self.tokens,
            reason=reason,
        )
        payload = FinishedPayload(
            agent=self.name,
            invocation=self.invocation,
            status=status,
            iterations=iterations,
            tokens=self.tokens,
            reason=reason,
        )
        self._emit(FINISHED, payload, replayed=not self.live)
        return result

    # -- the loop ----------------------------------------------------------------
    async def run(self) -> AgentResult:
        agent = self.agent
        for iteration in range(1, agent.max_iterations + 1):
            refusal = governed(self.ctx, self._check_model)
            if refusal is not None:
                self.live = not await record_refusal(self.ctx, refusal, self.name) or self.live
                return self._finish(
                    "refused", self._partial_output(), iteration - 1, refusal.detail
                )
            reply, replayed = await self._think(iteration)
            if reply is None:
                continue
            if reply.action == "final":
                output, why = self._validate_output(reply.output or {})
                if output is not None:
                    return self._finish("completed", output, iteration, "final answer")
                self._observe(
                    iteration, None, {"error": f"output rejected: {why}; fix it"}, replayed
                )
                continue
            await self._act(iteration, reply, replayed)
        return self._finish(
            "incomplete",
            self._partial_output(),
            agent.max_iterations,
            f"max_iterations {agent.max_iterations} reached; output built from observations",
        )

    def _check_model(self) -> Refusal | None:
        agent = self.agent
        if self.tokens >= agent.max_tokens:
            return Refusal(
                rule="agent_token_limit",
                detail=f"{self.name} used {self.tokens} of its {agent.max_tokens} tokens",
            )
        profile = self.kit.registry.model(agent.model)
        return self.kit.governance.check_model(
            self.name,
            agent,
            agent.model,
            self.kit.port.is_local(profile),
            self.kit.ledger,
            self.ctx.budget,
        )

    def _call(self, iteration: int) -> tuple[ModelCall, dict[str, Any]]:
        agent = self.agent
        compiled = compile_context(
            task=self.task,
            prior=self.prior,
            requires=agent.context.requires,
            observations=self.observations,
            max_tokens=agent.context.max_tokens,
        )
        tools = {
            tool: {
                "description": self.kit.registry.tool(tool).description,
                "input": describe(self.kit.registry.tool(tool).input),
            }
            for tool in agent.tools
        }
        output = describe(agent.output)
        system = (
            f"You are {self.name}: {agent.role}\n{_fill(agent.instructions, self.task)}\n"
            "Work in turns. Each turn answer with one JSON object: "
            '{"thought": "...", "action": "tool", "tool": NAME, "args": {...}} to use a tool, '
            'or {"thought": "...", "action": "final", "output": {...}} to finish.\n'
            f"Tools: {json.dumps(tools, ensure_ascii=False)}\n"
            f"Output fields: {json.dumps(output, ensure_ascii=False)}\n"
            f"This is turn {iteration} of at most {agent.max_iterations}."
        )
        profile = self.kit.registry.model(agent.model)
        call = ModelCall(
            task=REACT_TASK,
            system=system,
            prompt=compiled.text,
            inputs={
                "agent": self.name,
                "iteration": iteration,
                "max_iterations": agent.max_iterations,
                "task": {
                    key: compiled.values[f"task.{key}"]
                    for key in self.task
                    if f"task.{key}" in compiled.values
                },
                "context": {
                    ref: value
                    for ref, value in compiled.values.items()
                    if ref.partition(".")[0] in self.prior
                },
                "tools": {
                    tool: {
                        name: spec.model_dump()
                        for name, spec in self.kit.registry.tool(tool).input.items()
                    }
                    for tool in agent.tools
                },
                "observations": [
                    compiled.values[f"observation {index}"]
                    for index in range(1, len(self.observations) + 1)
                    if f"observation {index}" in compiled.values
                ],
                "tools_used": [o["tool"] for o in self.observations if o.get("tool")],
                "output": {name: spec.model_dump() for name, spec in agent.output.items()},
            },
            profile_name=agent.model,
            profile=profile,
            local_only=self.kit.governance.local_only(self.name, agent),
        )
        return call, compiled.summary()

    async def _think(self, iteration: int) -> tuple[AgentReply | None, bool]:
        ctx = self.ctx
        call, context = self._call(iteration)
        index = ctx.next_call_index
        replays = ctx.stats.replayed
        tokens_before = ctx.stats.tokens
        try:
            response = await self.kit.port.ask(ctx.llm, call, AgentReply)
        except BudgetExceeded:
            raise
        except Exception as error:  # noqa: BLE001 - a failed call is the agent's observation
            replayed = ctx.stats.replayed > replays
            self._observe(iteration, None, {"error": f"model call failed: {error}"}, replayed)
            return None, replayed
        replayed = ctx.stats.replayed > replays
        tokens = ctx.stats.tokens - tokens_before
        self.tokens += tokens
        profile = self.kit.registry.model(self.agent.model)
        self.kit.ledger.charge(
            (ctx.step_id, ctx.iteration, index), self.name, tokens, profile.cost(tokens)
        )
        reply, why = read_answer(self.kit.port.answer(response), AgentReply)
        self._emit(
            THOUGHT,
            ThoughtPayload(
                agent=self.name,
                invocation=self.invocation,
                iteration=iteration,
                thought=reply.thought if reply else "",
                action=reply.action if reply else "unreadable",
                tool=reply.tool if reply else None,
                args=reply.args if reply else {},
                context=context,
                tokens=tokens,
                unreadable=why,
            ),
            replayed,
        )
        if reply is None:
            self._observe(
                iteration,
                None,
                {"error": f"unreadable answer ({why}); answer with one JSON object as asked"},
                replayed,
            )
        return reply, replayed

    async def _act(self, iteration: int, reply: AgentReply, replayed: bool) -> None:
        ctx = self.ctx
        tool = reply.tool
        refusal = governed(ctx, lambda: self.kit.governance.check_tool(self.name, self.agent, tool))
        if refusal is not None:
            await record_refusal(ctx, refusal, self.name)
            observation = {"refused_by": refusal.rule, "detail": refusal.detail}
            self._observe(iteration, tool, observation, replayed)
            return
        assert tool is not None
        definition = self.kit.registry.tool(tool)
        args, why = self._validate_args(tool, reply.args)
        if args is None:
            self._observe(iteration, tool, {"error": f"bad arguments for {tool}: {why}"}, replayed)
            return
        if self.kit.governance.needs_approval(tool):
            answer = await ctx.interrupt(
                InterruptRequest(
                    kind="approval",
                    prompt=f"Agent {self.name} wants to run {_call_text(tool, args)}"
                    f" ({definition.side_effect}). Allow it?",
                    payload={"agent": self.name, "tool": tool, "args": args},
                )
            )
            if answer.action == "reject":
                refusal = Refusal(
                    rule="approval_rejected",
                    detail=f"a person rejected {tool}{f': {answer.note}' if answer.note else ''}",
                )
                await record_refusal(ctx, refusal, self.name)
                self._observe(
                    iteration,
                    tool,
                    {"refused_by": refusal.rule, "detail": refusal.detail},
                    replayed,
                )
                return
            if answer.action == "edit" and isinstance(answer.value, dict):
                # the app edits the whole payload shown; an API caller may send the args alone
                value = answer.value.get("args", answer.value)
                edited, why = self._validate_args(tool, value if isinstance(value, dict) else {})
                if edited is None:
                    self._observe(iteration, tool, {"error": f"edited arguments: {why}"}, replayed)
                    return
                args = edited
        implementation = self.kit.tools.get(definition.runs)

        async def run_tool() -> dict[str, Any]:
            try:
                return {"result": await implementation(ctx, args)}
            except Exception as error:  # noqa: BLE001 - a failing tool is the agent's observation
                return {"error": f"{type(error).__name__}: {error}"}

        observation, tool_replayed = await ctx.journaled(
            self.kit.tools.journal_kind(definition.runs),
            run_tool,
            encode=_json_safe,
            decode=lambda payload: payload,
        )
        self._observe(iteration, tool, observation, tool_replayed)

    def _validate_args(self, tool: str, args: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        try:
            model = self.kit.registry.input_models[tool].model_validate(args)
        except ValidationError as error:
            first = error.errors()[0]
            return None, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        return model.model_dump(mode="json", exclude_none=True), ""

    def _validate_output(self, output: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        try:
            model = self.output_model.model_validate(output)
        except ValidationError as error:
            first = error.errors()[0]
            return None, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
        return model.model_dump(mode="json"), ""

    def _partial_output(self) -> dict[str, Any]:
        """Tier-3 completion: each declared field the observations hold, by name."""
        found: dict[str, Any] = {}
        for field_name in self.agent.output:
            for observation in reversed(self.observations):
                value = find_key(observation, field_name)
                if value is not None:
                    found[field_name] = value
                    break
        output, _ = self._validate_output(found)
        return output if output is not None else found


def find_key(value: Any, key: str) -> Any:
    """The first value stored under ``key`` anywhere in ``value`` (depth first)."""
    if isinstance(value, dict):
        if key in value:
            return value[key]
        children = list(value.values())
    elif isinstance(value, list):
        children = list(value)
    else:
        return None
    for child in children:
        found = find_key(child, key)
        if found is not None:
            return found
    return None


def _call_text(tool: str, args: dict[str, Any], limit: int = 160) -> str:
    """``tool(name=value, ...)`` for a prompt, long values shortened."""
    shown = ", ".join(f"{k}={clip(json.dumps(v, ensure_ascii=False), 60)}" for k, v in args.items())
    return clip(f"{tool}({shown})", limit)


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
