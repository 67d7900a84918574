"""``uses: agent.NAME``: the bounded ReAct loop and the governance policies, on a real SQLite store.

The policy table covers each kind of decision — allowed, refused (by the agent's
own tool list, by a policy's allow list, by a denial, by a budget, by a model
allow list), approval required (approved and rejected) and local-only — and
checks for each that a refused call is never made, that the refusal is stored
as a ``policy_violation`` event, and that the agent's next turn sees it as its
observation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.port import ModelCall
from agents.services import AgentServices
from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised
from engine.kahn import KahnEngine
from engine.langgraph_engine import LangGraphEngine
from engine.protocol import RunContext
from engine.services import ServiceRegistry
from engine.states import RunStatus, StepStatus
from engine.store import RunStore
from tests.agents.agent_helpers import (
    AnswerPort,
    ScriptedModel,
    domain,
    load,
    make_registry,
    run_workflow,
    steps_for,
)
from tests.engine.kahn_helpers import CallCounter

ONE_AGENT = """\
name: one_agent
inputs:
  topic: {type: string, default: owls}
steps:
  - id: work
    uses: agent.{agent}
    inputs: {topic: "inputs.topic"}
"""


def turns(*answers: Any) -> Any:
    """A script answering turn n (the agent's iteration) with answers[n-1], the last repeating."""

    def script(call: ModelCall) -> Any:
        return answers[min(int(call.inputs["iteration"]) - 1, len(answers) - 1)]

    return script


def tool(name: str, **args: Any) -> dict[str, Any]:
    return {"thought": f"use {name}", "action": "tool", "tool": name, "args": args}


FINAL = {"thought": "done", "action": "final", "output": {"topic": "owls"}}


async def run_agent(
    tmp_path: Path,
    script: Any,
    *,
    agent: str = "alpha",
    policy: str = "",
    responder: Any = None,
    langgraph: bool = False,
) -> tuple[Any, list[Any], ScriptedModel, list[str]]:
    registry = make_registry(policy)
    steps = steps_for(registry)
    wf = load(ONE_AGENT.replace("{agent}", agent), steps)
    model = ScriptedModel(script)
    counter = tmp_path / "tools.txt"
    counter.touch()
    with RunStore(tmp_path / "runs.sqlite") as store:
        result, events = await run_workflow(
            wf,
            steps,
            store,
            model,
            responder=responder,
            services=[CallCounter(counter)],
            engine=LangGraphEngine(registry=steps) if langgraph else None,
        )
    return result, events, model, counter.read_text().splitlines()


# -- the loop's bounds -----------------------------------------------------------------


async def test_a_tool_then_a_final_answer(tmp_path: Path) -> None:
    result, events, model, tools = await run_agent(
        tmp_path, turns(tool("lookup", topic="owls"), FINAL)
    )
    assert result.status == RunStatus.COMPLETED
    assert result.step_statuses["work"] == StepStatus.SUCCEEDED
    assert len(model.calls) == 2 and len(tools) == 1
    second = model.calls[1].inputs["observations"]
    assert second == [{"tool": "lookup", "result": {"topic": "owls", "seen": {"topic": "owls"}}}]
    thoughts = domain(events, "agent.thought")
    assert [t["action"] for t in thoughts] == ["tool", "final"]
    assert [o["tool"] for o in domain(events, "agent.observation")] == ["lookup"]
    assert domain(events, "agent.finished")[0]["status"] == "completed"


async def test_an_agent_that_never_finishes_stops_at_max_iterations(tmp_path: Path) -> None:
    result, events, model, tools = await run_agent(tmp_path, turns(tool("lookup", topic="owls")))
    assert len(model.calls) == 4, "max_iterations: 4 model turns, not one more"
    assert len(tools) == 4
    finished = domain(events, "agent.finished")[0]
    assert finished["status"] == "incomplete"
    assert "max_iterations 4 reached" in finished["reason"]
    assert result.outputs == {} and result.status == RunStatus.COMPLETED
    work = next(e for e in events if e.kind == "step_finished")
    assert work.outputs == {"topic": "owls"}, "tier 3: the output is built from the observations"


async def test_garbage_answers_end_in_a_clear_step_failure(tmp_path: Path) -> None:
    result, events, model, _ = await run_agent(tmp_path, turns("not json at all", {"action": 7}))
    assert len(model.calls) == 4
    failed = next(e for e in events if e.kind == "step_failed")
    assert "agent alpha ended incomplete" in failed.error
    assert "without a valid output" in failed.error
    unreadable = [t["unreadable"] for t in domain(events, "agent.thought")]
    assert unreadable[0].startswith("not JSON") and unreadable[1].startswith("action")
    assert "unreadable answer" in model.calls[1].inputs["observations"][0]["error"]


async def test_an_invalid_final_output_is_shown_to_the_agent_and_repaired(tmp_path: Path) -> None:
    bad = {"thought": "done", "action": "final", "output": {"topic": 3, "extra": 1}}
    result, _, model, _ = await run_agent(tmp_path, turns(bad, FINAL))
    assert result.step_statuses["work"] == StepStatus.SUCCEEDED
    assert "output rejected" in model.calls[1].inputs["observations"][0]["error"]


async def test_a_failing_tool_is_an_observation_not_a_crash(tmp_path: Path) -> None:
    result, _, model, _ = await run_agent(tmp_path, turns(tool("explode"), FINAL))
    assert result.step_statuses["work"] == StepStatus.SUCCEEDED
    assert model.calls[1].inputs["observations"][0] == {
        "tool": "explode",
        "error": "RuntimeError: the tool broke",
    }


async def test_the_agent_token_limit_stops_the_loop_before_the_call(tmp_path: Path) -> None:
    _, events, model, _ = await run_agent(tmp_path, turns(tool("lookup", topic="o")), agent="tight")
    assert len(model.calls) == 2, "10 tokens per call: after two, 20 of 15 are spent"
    assert [e.rule for e in events if e.kind == "policy_violation"] == ["agent_token_limit"]
    assert domain(events, "agent.finished")[0]["status"] == "refused"


# -- the policy table ---------------------------------------------------------------------

POLICY_TABLE = {
    "allowed": ("", tool("lookup", topic="owls"), None, 1),
    "tool_not_in_agent_definition": ("", tool("shred", topic="x"), "unknown_tool", 0),
    "tool_not_allowed_by_policy": (
        "policies:\n  p:\n    agents:\n      alpha: {tools: [lookup]}\n",
        tool("write_file", text="x"),
        "tool_not_allowed",
        0,
    ),
    "tool_denied": (
        "policies:\n  p:\n    denied_tools: [lookup]\n",
        tool("lookup", topic="owls"),
        "tool_denied",
        0,
    ),
    "local_only_external_tool": (
        "policies:\n  p:\n    agents:\n      alpha: {local_only: true}\n",
        tool("post_web", text="secret"),
        "local_only",
        0,
    ),
    "local_only_writes_are_local": (
        "policies:\n  p:\n    agents:\n      alpha: {local_only: true}\n",
        tool("write_file", text="secret"),
        None,
        1,
    ),
}


@pytest.mark.parametrize(
    "policy,first,rule,executed", POLICY_TABLE.values(), ids=list(POLICY_TABLE)
)
async def test_policy_table_for_tool_calls(
    tmp_path: Path, policy: str, first: dict[str, Any], rule: str | None, executed: int
) -> None:
    result, events, model, tools = await run_agent(tmp_path, turns(first, FINAL), policy=policy)
    assert result.status == RunStatus.COMPLETED
    assert len(tools) == executed, "a refused tool is never run"
    violations = [e for e in events if e.kind == "policy_violation"]
    seen = model.calls[1].inputs["observations"][0]
    if rule is None:
        assert violations == []
        assert "result" in seen
    else:
        assert [(v.rule, v.step_id) for v in violations] == [(rule, "work")]
        assert violations[0].detail.startswith("alpha: ")
        assert seen["refused_by"] == rule, "the agent sees the refusal as its observation"
        observation = domain(events, "agent.observation")[0]
        assert observation["refused"] == rule
        stored = RunStore(tmp_path / "runs.sqlite")
        try:
            kinds = [e.kind for e in stored.events(result.run_id)]
        finally:
            stored.close()
        assert "policy_violation" in kinds, "the violation is in the run store"


MODEL_TABLE = {
    "model_not_allowed": (
        "policies:\n  p:\n    agents:\n      alpha: {models: [remote]}\n",
        "alpha",
        "model_not_allowed",
        0,
    ),
    "local_only_agent_on_a_remote_profile": ("", "secret", "local_only", 0),
    "run_budget": ("policies:\n  p:\n    run_budget: {calls: 2}\n", "alpha", "run_budget", 2),
    "run_budget_cost": (
        "policies:\n  p:\n    run_budget: {cost: 0.025}\n",
        "pricey",
        "run_budget",
        3,
    ),
    "agent_budget_tokens": (
        "policies:\n  p:\n    agents:\n      '*': {budget: {tokens: 30}}\n",
        "alpha",
        "agent_budget",
        3,
    ),
}


@pytest.mark.parametrize("policy,agent,rule,calls", MODEL_TABLE.values(), ids=list(MODEL_TABLE))
async def test_policy_table_for_model_calls(
    tmp_path: Path, policy: str, agent: str, rule: str, calls: int
) -> None:
    result, events, model, _ = await run_agent(
        tmp_path, turns(tool("lookup", topic="owls")), agent=agent, policy=policy
    )
    assert len(model.calls) == calls, "the refused model call is never made"
    violations = [e for e in events if e.kind == "policy_violation"]
    assert [v.rule for v in violations] == [rule]
    finished = domain(events, "agent.finished")[0]
    assert finished["status"] == "refused"
    assert result.status in (RunStatus.COMPLETED, RunStatus.FAILED)


async def test_approval_shows_the_tool_call_and_runs_it_when_approved(tmp_path: Path) -> None:
    asked: list[InterruptRequest] = []

    async def approve(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        asked.append(request)
        return InterruptAnswer(action="approve")

    result, events, model, tools = await run_agent(
        tmp_path,
        turns(tool("write_file", text="hello"), FINAL),
        policy="policies:\n  p:\n    approval_required: [write_file]\n",
        responder=approve,
    )
    assert len(asked) == 1
    assert asked[0].payload == {"agent": "alpha", "tool": "write_file", "args": {"text": "hello"}}
    raised = [e for e in events if e.kind == "interrupt_raised"]
    assert raised[0].payload["tool"] == "write_file", "the interrupt event shows the tool call"
    assert len(tools) == 1
    assert [e.kind for e in events].count("policy_violation") == 0


async def test_approval_rejected_is_refused_before_the_call(tmp_path: Path) -> None:
    async def reject(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        return InterruptAnswer(action="reject", note="not today")

    result, events, model, tools = await run_agent(
        tmp_path,
        turns(tool("write_file", text="hello"), FINAL),
        policy="policies:\n  p:\n    approval_required: [write_file]\n",
        responder=reject,
    )
    assert tools == []
    assert [e.rule for e in events if e.kind == "policy_violation"] == ["approval_rejected"]
    assert model.calls[1].inputs["observations"][0]["detail"].endswith("not today")


async def test_approval_on_langgraph_replays_the_step_without_repeating_a_call(
    tmp_path: Path,
) -> None:
    """LangGraph re-runs a node from its first line after an interrupt: the journal answers."""

    async def approve(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        return InterruptAnswer(action="approve")

    result, events, model, tools = await run_agent(
        tmp_path,
        turns(tool("lookup", topic="owls"), tool("write_file", text="hello"), FINAL),
        policy="policies:\n  p:\n    approval_required: [write_file]\n",
        responder=approve,
        langgraph=True,
    )
    assert result.engine == "langgraph" and result.status == RunStatus.COMPLETED
    assert len(model.calls) == 3, "each model turn once"
    assert len(tools) == 2, "each tool once"
    assert [t["action"] for t in domain(events, "agent.thought")] == ["tool", "tool", "final"]
    assert len(domain(events, "agent.finished")) == 1


async def test_a_person_can_edit_the_tool_call_before_it_runs(tmp_path: Path) -> None:
    async def edit(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        return InterruptAnswer(action="edit", value={**request.payload, "args": {"text": "safer"}})

    _, _, model, tools = await run_agent(
        tmp_path,
        turns(tool("write_file", text="hello"), FINAL),
        policy="policies:\n  p:\n    approval_required: [write_file]\n",
        responder=edit,
    )
    assert tools == ["work#2:[('text', 'safer')]"]
    assert model.calls[1].inputs["observations"][0]["result"]["seen"] == {"text": "safer"}


async def test_the_run_budget_counts_what_was_spent_before_a_resume(tmp_path: Path) -> None:
    """The run waits for an approval; resumed in a new context (a fresh ledger), the calls the
    first process made still count against the run budget."""
    policy = "policies:\n  p:\n    run_budget: {calls: 3}\n    approval_required: [write_file]\n"
    steps = steps_for(make_registry(policy))
    wf = load(
        "name: two\nsteps:\n  - {id: one, uses: agent.alpha}\n"
        "  - {id: two, uses: agent.alpha, depends_on: [one]}\n",
        steps,
    )

    def script(call: ModelCall) -> Any:
        if call.inputs["iteration"] == 1:
            if call.inputs["context"]:
                return tool("write_file", text="hello")
            return tool("lookup", topic="owls")
        return FINAL

    with RunStore(tmp_path / "runs.sqlite") as store:
        first, _ = await run_workflow(wf, steps, store, ScriptedModel(script))
        assert first.status == RunStatus.WAITING

        async def approve(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
            return InterruptAnswer(action="approve")

        resumed_model = ScriptedModel(script)
        context = RunContext(
            store=store,
            model=resumed_model,
            responder=approve,
            services=ServiceRegistry(AgentServices(port=AnswerPort())),
        )
        result = await KahnEngine(registry=steps).resume(first.run_id, context)
        events = store.events(first.run_id)
    assert result.status == RunStatus.COMPLETED
    assert resumed_model.calls == [], "the one call left in the budget was refused"
    violations = [e for e in events if e.kind == "policy_violation"]
    assert [(v.rule, v.step_id) for v in violations] == [("run_budget", "two")]
