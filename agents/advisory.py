"""Advisory workflow mode (ADR-002 §1, §6, §9, §12, §14): an orchestrator plans its own route.

An advisory workflow names required agents, optional agents, a suggested
sequence and completion criteria. The orchestrator — a registry agent whose
actions are "invoke agent X" or "complete" — decides each next move through
``StepContext.llm``. Whatever it answers, only what the workflow offers (and
the policies let it invoke) can run: an unknown agent, an agent invoked too
often, a premature "complete", garbage or a failed call all fall back to the
suggested sequence, and the decision event says why. It is bounded by
iterations and by time; at the bound it completes with what it has (tier 3)
and says so. With the built-in model the orchestrator is handed the
fallback's own suggestion, so it is deterministic and works offline.

The suggested next agent is the first one of the sequence (or the plan a
person approved) not yet run whose ``skip_when`` does not hold — so optional
agents are skipped by their declared conditions.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

from agents.governance import Refusal
from agents.port import ORCHESTRATE_TASK, ModelCall, OrchestratorDecision, read_answer
from agents.react import AgentKit, AgentLoop, AgentResult, governed, record_refusal
from agents.registry import Registry
from agents.trail import DECISION, PLAN, DecisionPayload, PlanPayload
from engine.conditions import CelSyntaxError, compile_expr, evaluate_bool
from engine.context import BudgetExceeded, InterruptRequest, StepContext
from engine.loader.finite import finite_refusal
from engine.loader.names import identifier_problem
from engine.spec import Amount, Count, Identifier, Spec
from engine.steps import SectionProblems

ORCHESTRATOR_STEP = "advisory.orchestrator"
ORCHESTRATOR_STEP_ID = "orchestrator"


class CompletionCriteria(Spec):
    required_agents: list[Identifier] | None = None
    """Agents that must have completed (None: the workflow's required agents)."""
    min_agents: Count = Field(default=0, ge=0)
    required_outputs: list[str] = Field(default_factory=list)
    """``agent.field`` outputs that must be present and non-empty."""


class AdvisorySpec(Spec):
    orchestrator: Identifier
    """The registry agent that decides (its role, instructions and model profile)."""
    required_agents: list[Identifier] = Field(min_length=1)
    optional_agents: list[Identifier] = Field(default_factory=list)
    suggested_sequence: list[Identifier] = Field(min_length=1)
    skip_when: dict[Identifier, str] = Field(default_factory=dict)
    """Optional agent → CEL over ``inputs`` and ``agents.<name>.<field>``: skip it when true."""
    completion: CompletionCriteria = Field(default_factory=CompletionCriteria)
    max_iterations: Count = Field(default=10, ge=1, le=100)
    timeout_s: Amount = Field(default=300.0, gt=0)
    max_invocations: Count = Field(default=2, ge=1)
    """How often one agent may run in one advisory run (policies may lower it)."""
    approve_plan: bool = False

    @property
    def offer(self) -> list[str]:
        return list(dict.fromkeys([*self.required_agents, *self.optional_agents]))

    @property
    def must_complete(self) -> list[str]:
        return list(self.completion.required_agents or self.required_agents)


def check_advisory(
    data: Any, known_agents: set[str]
) -> tuple[AdvisorySpec | None, SectionProblems]:
    """The ``advisory`` section checked: (spec, []) or (None, [(path in it, message), ...])."""
    try:
        spec = AdvisorySpec.model_validate(data)
    except ValidationError as error:
        problems: SectionProblems = []
        for detail in error.errors():
            loc = tuple(detail["loc"])
            message = detail["msg"].removeprefix("Value error, ")
            if detail["type"] == "extra_forbidden":
                message = f"unknown key '{loc[-1]}'"
            elif detail["type"] == "finite_number":
                message = finite_refusal(detail["input"])
            elif detail["type"] == "string_pattern_mismatch":  # every name here is an agent's
                loc = loc[:-1] if loc[-1] == "[key]" else loc
                message = identifier_problem(detail["input"], "agent name")
            problems.append((loc, message))
        return None, problems
    problems = advisory_problems(spec, known_agents)
    return (None if problems else spec), problems


def advisory_problems(spec: AdvisorySpec, known_agents: set[str]) -> SectionProblems:
    """What the model cannot check alone: agents the registry lacks, CEL that does not compile."""
    problems: SectionProblems = []
    offer = spec.offer
    for index, name in enumerate(spec.suggested_sequence):
        if name not in offer:
            problems.append(
                (
                    ("suggested_sequence", index),
                    f"'{name}' is neither a required nor an optional agent",
                )
            )
    for name in spec.skip_when:
        if name not in spec.optional_agents:
            problems.append(
                (("skip_when", name), f"'{name}' is not optional; only optional agents are skipped")
            )
    for index, name in enumerate(spec.completion.required_agents or []):
        if name not in offer:
            problems.append((("completion", "required_agents", index), f"'{name}' is not offered"))
    if spec.orchestrator in offer:
        problems.append((("orchestrator",), "the orchestrator cannot also be an agent it invokes"))
    if spec.orchestrator not in known_agents:
        problems.append(
            (("orchestrator",), f"unknown agent '{spec.orchestrator}' (not in the registry)")
        )
    for key in ("required_agents", "optional_agents"):
        for index, name in enumerate(getattr(spec, key)):
            if name not in known_agents:
                problems.append(((key, index), f"unknown agent '{name}' (not in the registry)"))
    for name, text in spec.skip_when.items():
        try:
            compile_expr(text)
        except CelSyntaxError as error:
            problems.append((("skip_when", name), f"skip_when.{name} is not valid CEL: {error}"))
    return problems


Outcome = Literal["completed", "incomplete", "rejected"]


class Orchestrator:
    def __init__(self, ctx: StepContext, kit: AgentKit, spec: AdvisorySpec) -> None:
        self.ctx = ctx
        self.kit = kit
        self.spec = spec
        self.clock = kit.clock
        self.plan = list(spec.suggested_sequence)
        self.results: list[AgentResult] = []
        self.outputs: dict[str, dict[str, Any]] = {}
        self.invocations: dict[str, int] = {}
        self.decisions = 0
        self.fallbacks = 0
        self.spent_s = 0.0
        """Seconds this execution has spent deciding and invoking. A resumed run starts it
        again; the decisions it replays from the journal take next to nothing."""

    # -- state -------------------------------------------------------------------
    @property
    def completed(self) -> list[str]:
        return [r.agent for r in self.results if r.status == "completed"]

    def unmet(self) -> str:
        """Why the completion criteria do not hold yet ("" when they do)."""
        done = set(self.completed)
        for name in self.spec.must_complete:
            if name not in done:
                return f"required agent {name} has not completed"
        if len(done) < self.spec.completion.min_agents:
            return (
                f"{len(done)} agents completed (at least {self.spec.completion.min_agents} needed)"
            )
        for ref in self.spec.completion.required_outputs:
            agent, _, field_name = ref.partition(".")
            if not self.outputs.get(agent, {}).get(field_name):
                return f"required output {ref} is missing"
        return ""

    def skipped(self, name: str) -> bool:
        text = self.spec.skip_when.get(name)
        if text is None:
            return False
        activation = {"inputs": dict(self.ctx.run_inputs), "agents": dict(self.outputs)}
        matched, _ = evaluate_bool(compile_expr(text), activation)
        return matched

    def invocable(self, name: str) -> Refusal | None:
        return self.kit.governance.check_invoke(
            self.spec.orchestrator, name, self.invocations.get(name, 0), self.spec.max_invocations
        )

    def suggestion(self) -> str | None:
        """The fallback's next agent: the plan's first not-yet-run, not-skipped, invocable one;
        then any required agent still unmet; None when there is nothing left to run."""
        ran = {r.agent for r in self.results}
        for name in self.plan:
            if name not in ran and not self.skipped(name) and self.invocable(name) is None:
                return name
        for name in self.spec.must_complete:
            if name not in self.completed and self.invocable(name) is None:
                return name
        return None

    # -- the loop ----------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        if self.spec.approve_plan and not await self._approve_plan():
            return self._result("rejected", "a person rejected the plan")
        for iteration in range(1, self.spec.max_iterations + 1):
            if self.spent_s >= self.spec.timeout_s:
                return self._result(
                    "incomplete" if self.unmet() else "completed",
                    f"timeout_s {self.spec.timeout_s:g} reached",
                )
            started = self.clock()
            action, agent = await self._decide(iteration)
            if action == "complete":
                self.spent_s += self.clock() - started
                unmet = self.unmet()
                return self._result(
                    "incomplete" if unmet else "completed",
                    unmet or "completion criteria met",
                )
            assert agent is not None
            await self._invoke(agent)
            self.spent_s += self.clock() - started
        unmet = self.unmet()
        return self._result(
            "incomplete" if unmet else "completed",
            f"max_iterations {self.spec.max_iterations} reached" + (f"; {unmet}" if unmet else ""),
        )

    async def _approve_plan(self) -> bool:
        payload = PlanPayload(offer=self.spec.offer, plan=self.plan)
        answer = await self.ctx.interrupt(
            InterruptRequest(
                kind="approval",
                prompt="Approve the orchestrator's plan?",
                payload=payload.model_dump(mode="json"),
            )
        )
        if answer.action == "reject":
            self.ctx.emit(PLAN, payload.model_copy(update={"approved": False}).model_dump())
            return False
        edited = answer.value.get("plan") if isinstance(answer.value, dict) else answer.value
        if answer.action == "edit" and isinstance(edited, list):
            offered = set(self.spec.offer)
            self.plan = [str(name) for name in edited if str(name) in offered]
        self.ctx.emit(
            PLAN, PlanPayload(offer=self.spec.offer, plan=self.plan, approved=True).model_dump()
        )
        return True

    async def _decide(self, iteration: int) -> tuple[str, str | None]:
        ctx = self.ctx
        suggestion = self.suggestion()
        unmet = self.unmet()
        orchestrator = self.kit.registry.agent(self.spec.orchestrator)
        profile = self.kit.registry.model(orchestrator.model)
        offer = {
            name: self.kit.registry.agent(name).role
            for name in self.spec.offer
            if self.invocable(name) is None
        }
        call = ModelCall(
            task=ORCHESTRATE_TASK,
            system=(
                f"You are {self.spec.orchestrator}: {orchestrator.role}\n{orchestrator.instructions}\n"
                'Answer with one JSON object: {"thought": "...", "action": "invoke", "agent": NAME}'
                ' or {"thought": "...", "action": "complete"}. Invoke only agents listed as offered.'
            ),
            prompt=(
                f"Offered agents: {offer}\nSuggested sequence: {self.plan}\n"
                f"Run so far: {[(r.agent, r.status) for r in self.results]}\n"
                f"Completion: {unmet or 'criteria met'}\nSuggested next: {suggestion or 'complete'}\n"
                f"Outputs so far: {self.outputs}"
            ),
            inputs={
                "iteration": iteration,
                "offer": sorted(offer),
                "executed": [r.agent for r in self.results],
                "suggested": suggestion,
                "unmet": unmet,
                "outputs": self.outputs,
            },
            profile_name=orchestrator.model,
            profile=profile,
            local_only=self.kit.governance.local_only(self.spec.orchestrator, orchestrator),
        )
        fallback_reason = ""
        proposed = ""
        thought = ""
        decision: OrchestratorDecision | None = None
        replays = ctx.stats.replayed
        refusal = governed(
            ctx,
            lambda: self.kit.governance.check_model(
                self.spec.orchestrator,
                orchestrator,
                orchestrator.model,
                self.kit.port.is_local(profile),
                self.kit.ledger,
                ctx.budget,
            ),
        )
        if refusal is not None:
            await record_refusal(ctx, refusal, self.spec.orchestrator)
            fallback_reason = f"model call refused: {refusal.detail}"
        else:
            index = ctx.next_call_index
            tokens_before = ctx.stats.tokens
            try:
                response = await self.kit.port.ask(ctx.llm, call, OrchestratorDecision)
            except BudgetExceeded:
                raise
            except Exception as error:  # noqa: BLE001 - a failed decision falls back
                fallback_reason = f"model call failed: {error}"
            else:
                tokens = ctx.stats.tokens - tokens_before
                self.kit.ledger.charge(
                    (ctx.step_id, ctx.iteration, index),
                    self.spec.orchestrator,
                    tokens,
                    profile.cost(tokens),
                )
                decision, why = read_answer(self.kit.port.answer(response), OrchestratorDecision)
                if decision is None:
                    fallback_reason = f"unreadable decision ({why})"
                    proposed = "unreadable"
        if decision is not None:
            thought = decision.thought
            proposed = "complete" if decision.action == "complete" else f"invoke {decision.agent}"
            fallback_reason = await self._invalid(decision, unmet)
        fallback = bool(fallback_reason)
        if fallback:
            self.fallbacks += 1
            chosen: tuple[str, str | None] = (
                ("invoke", suggestion) if suggestion else ("complete", None)
            )
        else:
            assert decision is not None
            chosen = (decision.action, decision.agent)
        self.decisions += 1
        if ctx.stats.replayed == replays:
            payload = DecisionPayload(
                iteration=iteration,
                thought=thought,
                proposed=proposed or "none",
                chosen=chosen[0] if chosen[1] is None else f"invoke {chosen[1]}",
                fallback=fallback,
                reason=fallback_reason or "accepted",
            )
            ctx.emit(DECISION, payload.model_dump(mode="json"))
        return chosen

    async def _invalid(self, decision: OrchestratorDecision, unmet: str) -> str:
        """Why the model's decision cannot be followed ("" when it can)."""
        if decision.action == "complete":
            return f"cannot complete yet: {unmet}" if unmet else ""
        name = decision.agent
        if not name or name not in self.spec.offer:
            return f"agent {name!r} is not offered by this workflow ({', '.join(self.spec.offer)})"
        refusal = self.invocable(name)
        if refusal is not None:
            await record_refusal(self.ctx, refusal, self.spec.orchestrator)
            return refusal.detail
        return ""

    async def _invoke(self, name: str) -> None:
        self.invocations[name] = self.invocations.get(name, 0) + 1
        prior = {**self.ctx.upstream, **self.outputs}
        loop = AgentLoop(
            self.ctx,
            self.kit,
            name,
            dict(self.ctx.run_inputs),
            prior,
            invocation=self.invocations[name],
        )
        result = await loop.run()
        self.results.append(result)
        if result.output:
            self.outputs[name] = result.output

    def _result(self, status: Outcome, reason: str) -> dict[str, Any]:
        final = self.results[-1].output if self.results else {}
        return {
            "status": status,
            "completion_reason": reason,
            "agents_executed": [r.agent for r in self.results],
            "agent_statuses": [f"{r.agent}:{r.status}" for r in self.results],
            "decisions": self.decisions,
            "fallbacks": self.fallbacks,
            "agents": self.outputs,
            "final": final,
        }


def run_orchestrator(ctx: StepContext, registry: Registry) -> Orchestrator:
    spec = AdvisorySpec.model_validate(ctx.config)
    return Orchestrator(ctx, AgentKit.for_step(ctx, registry), spec)
