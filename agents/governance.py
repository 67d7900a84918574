"""Governance as policies, not code (ADR-002 §13): every call an agent is about to make is
checked against the loaded policy files *before* it is made.

Every policy applies, and each must allow a call: allow lists intersect, the
tightest budget wins, approval and local-only requirements add up. A refusal
names its rule; the caller journals it, emits it as a ``policy_violation``
event and gives it to the agent as its observation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from agents.registry import AgentDef, AgentRules, Budget, PolicyDef, Registry
from engine.context import RunBudget
from plumbing.frozen import Frozen


class Refusal(Frozen):
    rule: str
    detail: str
    policy: str = ""


@dataclass
class Spend:
    calls: int = 0
    tokens: int = 0
    cost: float = 0.0

    def over(self, budget: Budget) -> str | None:
        """Which limit of ``budget`` this spend has reached, if any."""
        if budget.calls is not None and self.calls >= budget.calls:
            return f"{self.calls} of {budget.calls} model calls used"
        if budget.tokens is not None and self.tokens >= budget.tokens:
            return f"{self.tokens} of {budget.tokens} tokens used"
        if budget.cost is not None and self.cost >= budget.cost:
            return f"cost {self.cost:.4f} of {budget.cost:.4f} spent"
        return None


@dataclass
class Ledger:
    """What one run's agents have spent. Charged once per journaled call (a re-run of a
    step replays its calls without charging them twice)."""

    run: Spend = field(default_factory=Spend)
    agents: dict[str, Spend] = field(default_factory=dict)
    _charged: set[tuple[str, int, int]] = field(default_factory=set)

    def charge(self, key: tuple[str, int, int], agent: str, tokens: int, cost: float) -> None:
        if key in self._charged:
            return
        self._charged.add(key)
        for spend in (self.run, self.agents.setdefault(agent, Spend())):
            spend.calls += 1
            spend.tokens += tokens
            spend.cost += cost

    def agent(self, name: str) -> Spend:
        return self.agents.get(name, Spend())

    def run_spend(self, budget: RunBudget) -> Spend:
        """The run's spend: this ledger's, or the run budget's counters where they are higher —
        those the engine restores on resume, so steps finished before a crash still count."""
        return Spend(
            calls=max(self.run.calls, budget.llm_calls),
            tokens=max(self.run.tokens, budget.tokens),
            cost=self.run.cost,
        )


class Governance:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.policies: list[tuple[str, PolicyDef]] = [
            (name, entry.definition) for name, entry in sorted(registry.policies.items())
        ]

    def rules(self, agent: str) -> Iterator[tuple[str, AgentRules]]:
        for name, policy in self.policies:
            for key in ("*", agent):
                if key in policy.agents:
                    yield name, policy.agents[key]

    def local_only(self, agent_name: str, agent: AgentDef) -> bool:
        return agent.local_only or any(r.local_only for _, r in self.rules(agent_name))

    def check_model(
        self,
        agent_name: str,
        agent: AgentDef,
        profile_name: str,
        is_local: bool,
        ledger: Ledger,
        budget: RunBudget,
    ) -> Refusal | None:
        for policy, rules in self.rules(agent_name):
            if rules.models is not None and profile_name not in rules.models:
                return Refusal(
                    rule="model_not_allowed",
                    detail=f"agent {agent_name} may not use model profile {profile_name}"
                    f" (allowed: {', '.join(rules.models) or 'none'})",
                    policy=policy,
                )
        if self.local_only(agent_name, agent) and not is_local:
            return Refusal(
                rule="local_only",
                detail=f"agent {agent_name} is local-only and model profile {profile_name}"
                " can reach a provider off this machine",
            )
        run_spend = ledger.run_spend(budget)
        for policy, definition in self.policies:
            spent = run_spend.over(definition.run_budget)
            if spent:
                return Refusal(rule="run_budget", detail=f"run budget: {spent}", policy=policy)
        spend = ledger.agent(agent_name)
        for policy, rules in self.rules(agent_name):
            spent = spend.over(rules.budget)
            if spent:
                return Refusal(
                    rule="agent_budget", detail=f"{agent_name} budget: {spent}", policy=policy
                )
        return None

    def check_tool(self, agent_name: str, agent: AgentDef, tool: str | None) -> Refusal | None:
        if not tool or tool not in self.registry.tools:
            return Refusal(
                rule="unknown_tool",
                detail=f"there is no tool {tool!r}; the tools are {', '.join(agent.tools) or 'none'}",
            )
        if tool not in agent.tools:
            return Refusal(
                rule="tool_not_allowed",
                detail=f"agent {agent_name} may use only {', '.join(agent.tools) or 'no tools'}",
            )
        for policy, definition in self.policies:
            if tool in definition.denied_tools:
                return Refusal(
                    rule="tool_denied", detail=f"tool {tool} is denied by policy", policy=policy
                )
        for policy, rules in self.rules(agent_name):
            if rules.tools is not None and tool not in rules.tools:
                return Refusal(
                    rule="tool_not_allowed",
                    detail=f"agent {agent_name} may not use tool {tool}"
                    f" (allowed: {', '.join(rules.tools) or 'none'})",
                    policy=policy,
                )
        side_effect = self.registry.tool(tool).side_effect
        if side_effect == "external" and self.local_only(agent_name, agent):
            return Refusal(
                rule="local_only",
                detail=f"agent {agent_name} is local-only and tool {tool} reaches outside",
            )
        return None

    def needs_approval(self, tool: str) -> bool:
        return any(tool in policy.approval_required for _, policy in self.policies)

    def check_invoke(
        self, orchestrator: str, agent: str, used: int, default_max: int
    ) -> Refusal | None:
        for policy, rules in self.rules(orchestrator):
            if rules.invoke is not None and agent not in rules.invoke:
                return Refusal(
                    rule="agent_invocation_denied",
                    detail=f"{orchestrator} may not invoke {agent}",
                    policy=policy,
                )
        limits = [r.max_invocations for _, r in self.rules(agent) if r.max_invocations]
        limit = min([default_max, *limits])
        if used >= limit:
            return Refusal(
                rule="max_invocations_exceeded",
                detail=f"{agent} already invoked {used} time(s) (limit {limit})",
            )
        return None
