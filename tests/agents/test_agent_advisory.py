"""Advisory mode: the orchestrator under honest and adversarial models, its bounds, plan
approval, the loader's checks, and the same run on both engines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from agents.port import ORCHESTRATE_TASK, ModelCall
from agents.services import AgentServices
from engine.context import InterruptAnswer, InterruptRequest
from engine.errors import WorkflowLoadError
from engine.events import InterruptRaised
from engine.langgraph_engine import LangGraphEngine
from engine.states import RunStatus
from engine.store import RunStore
from tests.agents.agent_helpers import (
    ADVISORY_WORKFLOW,
    AnswerPort,
    ScriptedModel,
    builtin_answer,
    domain,
    load,
    make_registry,
    run_workflow,
    steps_for,
)

OFFER = {"alpha", "beta", "gamma"}


def orchestrator(answer: Any) -> Any:
    """A model whose orchestrator answers ``answer(call)``; the worker agents answer as the
    built-in model does."""

    def script(call: ModelCall) -> Any:
        if call.task == ORCHESTRATE_TASK:
            return answer(call)
        return builtin_answer(call)

    return script


async def advise(
    tmp_path: Path,
    script: Any = builtin_answer,
    *,
    topic: str = "owls",
    workflow: str = ADVISORY_WORKFLOW,
    policy: str = "",
    responder: Any = None,
    services: Sequence[object] = (),
    engine: Any = None,
) -> tuple[Any, list[Any], ScriptedModel, dict[str, Any]]:
    steps = steps_for(make_registry(policy))
    model = ScriptedModel(script)
    with RunStore(tmp_path / "runs.sqlite") as store:
        result, events = await run_workflow(
            load(workflow, steps),
            steps,
            store,
            model,
            inputs={"topic": topic},
            responder=responder,
            services=services,
            engine=engine(steps) if engine else None,
        )
    finished = [e for e in events if e.kind == "step_finished" and e.step_id == "orchestrator"]
    return result, events, model, finished[0].outputs if finished else {}


def orchestrator_calls(model: ScriptedModel) -> list[ModelCall]:
    return [c for c in model.calls if c.task == ORCHESTRATE_TASK]


async def test_the_builtin_orchestrator_follows_the_suggested_sequence(tmp_path: Path) -> None:
    result, events, model, out = await advise(tmp_path)
    assert result.status == RunStatus.COMPLETED
    assert out["agents_executed"] == ["alpha", "gamma", "beta"]
    assert out["status"] == "completed" and out["fallbacks"] == 0
    assert result.outputs == {"topic": "owls"}
    decisions = domain(events, "advisory.decision")
    assert [d["chosen"] for d in decisions] == [
        "invoke alpha",
        "invoke gamma",
        "invoke beta",
        "complete",
    ]
    assert all(d["thought"] for d in decisions), "each decision shows its reasoning"


async def test_an_optional_agent_is_skipped_by_its_declared_condition(tmp_path: Path) -> None:
    _, _, _, out = await advise(tmp_path, topic="skip")
    assert out["agents_executed"] == ["alpha", "beta"]


def _raise(call: ModelCall) -> Any:
    raise RuntimeError("provider down")


ADVERSARIES = {
    "unknown_agent": lambda call: {"action": "invoke", "agent": "mallory", "thought": "!"},
    "agent_outside_the_workflow": lambda call: {"action": "invoke", "agent": "secret"},
    "endless_loop": lambda call: {"action": "invoke", "agent": "alpha", "thought": "again"},
    "garbage_text": lambda call: "I think we should maybe do something",
    "garbage_shape": lambda call: {"action": "dance", "agent": ["alpha"]},
    "premature_complete": lambda call: {"action": "complete", "thought": "good enough"},
    "failed_call": _raise,
    "orchestrator_invokes_itself": lambda call: {"action": "invoke", "agent": "boss"},
}


@pytest.mark.parametrize("answer", ADVERSARIES.values(), ids=list(ADVERSARIES))
async def test_the_orchestrator_never_leaves_the_offer(tmp_path: Path, answer: Any) -> None:
    result, events, model, out = await advise(tmp_path, orchestrator(answer))
    executed = out["agents_executed"]
    assert set(executed) <= OFFER, "nothing outside the workflow's offer ever runs"
    assert {"alpha", "beta"} <= set(executed), "the required agents still run"
    assert executed.count("alpha") <= 2, "max_invocations bounds re-invocation"
    assert len(orchestrator_calls(model)) <= 6, "bounded by max_iterations"
    assert out["status"] == "completed" and result.status == RunStatus.COMPLETED
    decisions = domain(events, "advisory.decision")
    assert any(d["fallback"] for d in decisions)
    for decision in decisions:
        if decision["fallback"]:
            assert decision["reason"] != "accepted"


async def test_an_endless_loop_is_refused_by_the_invocation_limit(tmp_path: Path) -> None:
    _, events, _, out = await advise(tmp_path, orchestrator(ADVERSARIES["endless_loop"]))
    assert out["agents_executed"][:2] == ["alpha", "alpha"], "re-invoking is allowed, twice"
    violations = [e for e in events if e.kind == "policy_violation"]
    assert violations and {v.rule for v in violations} == {"max_invocations_exceeded"}


async def test_a_policy_can_forbid_an_invocation(tmp_path: Path) -> None:
    policy = "policies:\n  p:\n    agents:\n      boss: {invoke: [alpha, beta]}\n"
    answer = orchestrator(lambda call: {"action": "invoke", "agent": "gamma"})
    _, events, _, out = await advise(tmp_path, answer, policy=policy)
    assert "gamma" not in out["agents_executed"]
    rules = {e.rule for e in events if e.kind == "policy_violation"}
    assert "agent_invocation_denied" in rules


async def test_the_time_bound_ends_the_run_with_what_it_has(tmp_path: Path) -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 50.0
        return now[0]

    workflow = ADVISORY_WORKFLOW.replace("max_iterations: 6", "max_iterations: 6\n  timeout_s: 90")
    _, _, _, out = await advise(
        tmp_path, workflow=workflow, services=[AgentServices(port=AnswerPort(), clock=clock)]
    )
    assert out["agents_executed"] == ["alpha", "gamma"]
    assert out["status"] == "incomplete"
    assert out["completion_reason"] == "timeout_s 90 reached"


async def test_at_max_iterations_it_completes_incomplete_and_says_so(tmp_path: Path) -> None:
    workflow = ADVISORY_WORKFLOW.replace("max_iterations: 6", "max_iterations: 1")
    _, _, _, out = await advise(tmp_path, workflow=workflow)
    assert out["agents_executed"] == ["alpha"]
    assert out["status"] == "incomplete"
    assert out["completion_reason"].startswith("max_iterations 1 reached; required agent beta")


@pytest.mark.parametrize("engine", [None, LangGraphEngine], ids=["kahn", "langgraph"])
async def test_a_person_approves_an_edited_plan_before_it_starts(
    tmp_path: Path, engine: Any
) -> None:
    asked: list[InterruptRequest] = []

    async def edit(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        asked.append(request)
        return InterruptAnswer(
            action="edit", value={**request.payload, "plan": ["beta", "mallory", "alpha"]}
        )

    workflow = ADVISORY_WORKFLOW.replace(
        "max_iterations: 6", "max_iterations: 6\n  approve_plan: true"
    )
    result, events, model, out = await advise(
        tmp_path,
        workflow=workflow,
        responder=edit,
        engine=(lambda steps: engine(registry=steps)) if engine else None,
    )
    assert len(asked) == 1 and asked[0].payload["plan"] == ["alpha", "gamma", "beta"]
    assert result.engine == ("langgraph" if engine else "kahn")
    assert out["agents_executed"] == ["beta", "alpha"], "unknown names in the edit are dropped"
    assert [p["plan"] for p in domain(events, "advisory.plan")] == [["beta", "alpha"]]
    assert len(orchestrator_calls(model)) == len(domain(events, "advisory.decision"))


async def test_a_rejected_plan_runs_nothing(tmp_path: Path) -> None:
    async def reject(raised: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
        return InterruptAnswer(action="reject")

    workflow = ADVISORY_WORKFLOW.replace(
        "max_iterations: 6", "max_iterations: 6\n  approve_plan: true"
    )
    _, _, model, out = await advise(tmp_path, workflow=workflow, responder=reject)
    assert out["status"] == "rejected" and out["agents_executed"] == []
    assert model.calls == []


async def test_both_engines_run_an_advisory_workflow_alike(tmp_path: Path) -> None:
    (tmp_path / "kahn").mkdir()
    (tmp_path / "lg").mkdir()
    kahn, kahn_events, _, kahn_out = await advise(tmp_path / "kahn")
    graph, graph_events, _, graph_out = await advise(
        tmp_path / "lg", engine=lambda steps: LangGraphEngine(registry=steps)
    )
    assert graph.engine == "langgraph" and kahn.engine == "kahn"
    assert graph.status == kahn.status == RunStatus.COMPLETED
    assert graph_out == kahn_out
    assert domain(graph_events, "advisory.decision") == domain(kahn_events, "advisory.decision")


LOADER_CASES = {
    "unknown_required_agent": (
        "required_agents: [alpha, beta]",
        "required_agents: [alpha, betta]",
        "wf.yaml:7:28: advisory.required_agents.1: unknown agent 'betta' (not in the registry)",
    ),
    "sequence_outside_the_offer": (
        "suggested_sequence: [alpha, gamma, beta]",
        "suggested_sequence: [alpha, gamma, beta, secret]",
        "wf.yaml:9:44: advisory.suggested_sequence.3: 'secret' is neither a required nor an"
        " optional agent",
    ),
    "bad_cel": (
        "gamma: \"inputs.topic == 'skip'\"",
        'gamma: "inputs.topic =="',
        "wf.yaml:11:12: advisory.skip_when.gamma: skip_when.gamma is not valid CEL",
    ),
    "unknown_key": (
        "max_iterations: 6",
        "max_iterations: 6\n  max_iteration: 3",
        "wf.yaml:13:3: advisory.max_iteration: unknown key 'max_iteration'",
    ),
    "steps_next_to_mode": (
        "outputs:",
        "steps:\n  - {id: a, uses: agent.alpha}\noutputs:",
        "wf.yaml:13:1: an advisory workflow has no steps",
    ),
    "unknown_mode": ("mode: advisory", "mode: strict", "wf.yaml:2:7: mode must be 'advisory'"),
    "agent_name_not_an_identifier": (
        "gamma: \"inputs.topic == 'skip'\"",
        "Bad-Name: \"inputs.topic == 'skip'\"",
        "wf.yaml:11:15: advisory.skip_when.Bad-Name: agent name 'Bad-Name' is not an identifier",
    ),
    "boolean_for_a_number": (
        "max_iterations: 6",
        "max_iterations: yes",
        "wf.yaml:12:19: advisory.max_iterations: YAML reads this value as a boolean, not a number",
    ),
}


@pytest.mark.parametrize("old,new,expected", LOADER_CASES.values(), ids=list(LOADER_CASES))
def test_the_loader_checks_the_advisory_section(old: str, new: str, expected: str) -> None:
    steps = steps_for(make_registry())
    assert old in ADVISORY_WORKFLOW
    with pytest.raises(WorkflowLoadError) as caught:
        load(ADVISORY_WORKFLOW.replace(old, new), steps)
    messages = [str(p) for p in caught.value.problems]
    assert any(m.startswith(expected) for m in messages), messages


def test_a_number_that_is_not_finite_is_one_problem_at_its_place() -> None:
    """The section refuses it however it is written (the text ``inf`` or ``1e400`` too), worded
    as every other place does; the one step made of the section is not checked again (it would
    name the same place a second time, as its config), yet it is made: the rest of the workflow
    may name it."""
    steps = steps_for(make_registry())
    assert "max_iterations: 6" in ADVISORY_WORKFLOW
    for written, shown in ((".inf", "inf"), (".nan", "nan"), ('"-inf"', "-inf"), ("1e400", "inf")):
        text = f"max_iterations: 6\n  timeout_s: {written}\ncompletion: {{required_steps: [orchestrator]}}"
        with pytest.raises(WorkflowLoadError) as caught:
            load(ADVISORY_WORKFLOW.replace("max_iterations: 6", text), steps)
        assert [str(p) for p in caught.value.problems] == [
            f"wf.yaml:13:14: advisory.timeout_s: {shown} is not a finite number, and a run stores"
            " none; write a finite number"
        ]
