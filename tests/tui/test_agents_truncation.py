"""Agents act on a truncated answer as every caller does (router/truncation.py): over real HTTP
to the loopback fault server, through the real router and the composition root's port, an
answer cut at its output limit is asked again once with more room; when that one is cut too,
the agent degrades as for any unreadable answer — a ReAct agent takes it as its observation
and tries again on its next turn, the orchestrator falls back to its plan."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agents.registration import register_agents
from agents.registry_loader import load_registry
from agents.tools import TOOL_IMPLEMENTATIONS
from engine.kahn import KahnEngine
from engine.loader import load_workflow_text
from engine.steps import StepRegistry
from research.corpus import Corpus
from router.build import build_router
from router.config import RouterConfig
from router.fault.demo import demo_router_config
from router.fault.server import FaultServer
from router.truncation import TRUNCATED_GROWTH
from tui.launch import agents_wiring
from tui.launch.parts import RunParts
from tui.launch.run import open_run
from tui.launch.wiring import extractive_handlers
from tui.launch.workspace import Workspace
from workflows import WORKFLOWS_DIR

pytestmark = pytest.mark.timeout(120)

OUTPUT_TOKENS = 700
REGISTRY = f"""\
models:
  remote: {{tier: 1, max_tokens: {OUTPUT_TOKENS}}}
agents:
  scribe:
    role: Writes a note on the topic.
    model: remote
    output:
      note: {{type: string, required: true}}
    max_iterations: 3
  chair:
    role: Decides whether the scribe runs.
    model: remote
    output:
      decision: {{type: string}}
    max_iterations: 4
  helper:
    role: Writes a note with the built-in model.
    model: builtin
    output:
      note: {{type: string}}
"""

REACT_WORKFLOW = """\
name: one_scribe
inputs:
  topic: {type: string, default: owls}
steps:
  - id: work
    uses: agent.scribe
    inputs: {topic: "inputs.topic"}
"""

ADVISORY_WORKFLOW = """\
name: chaired
mode: advisory
inputs:
  topic: {type: string, default: owls}
advisory:
  orchestrator: chair
  required_agents: [helper]
  suggested_sequence: [helper]
  max_iterations: 4
outputs:
  note: "steps.orchestrator.outputs.agents.helper.note"
"""

NOTE = {"thought": "enough", "action": "final", "output": {"note": "owls hoot at night"}}


def responder(task: str, inputs: dict[str, Any], raw: dict[str, Any]) -> Any:
    if task == "agent.react":
        return NOTE
    if task == "agent.orchestrate":
        if inputs.get("agents_executed") or int(inputs["iteration"]) > 1:
            return {"thought": "the helper has answered", "action": "complete"}
        return {"thought": "the helper first", "action": "invoke", "agent": "helper"}
    return "unexpected task"


def run(tmp_path: Path, workflow_text: str, sequence: list[str]) -> tuple[Any, list[Any], list]:
    user = tmp_path / "ws"
    (user / "agents").mkdir(parents=True)
    (user / "agents" / "truncation.yaml").write_text(REGISTRY)
    loaded = load_registry(
        [(WORKFLOWS_DIR, "shipped"), (user, "workspace")], TOOL_IMPLEMENTATIONS.names()
    )
    assert loaded.problems == []
    steps = StepRegistry()
    register_agents(loaded.registry, steps)
    workflow = load_workflow_text(workflow_text, source="wf.yaml", registry=steps)

    async def scenario() -> tuple[Any, list[Any], list]:
        script = {"providers": {"openai": {"sequence": sequence, "then": "ok"}}}
        async with FaultServer(script=script, responder=responder) as server:
            section = demo_router_config(server.base_url, ["openai"])
            config = agents_wiring.with_agent_profiles(
                RouterConfig.model_validate(section), loaded.registry
            )
            router = build_router(config, stats_path=None, task_handlers=extractive_handlers())
            corpus = Corpus(tmp_path / "corpus.sqlite")
            try:
                parts = RunParts(router=router, corpus=corpus)  # no agent here reads the corpus
                async with open_run(Workspace.at(user), workflow, inputs={}, parts=parts) as opened:
                    result = await KahnEngine(registry=steps).execute(workflow, opened.context)
                    events = opened.context.store.events(result.run_id)
            finally:
                corpus.close()
                await router.aclose()
            return result, events, server.requests_for("openai", "chat")

    return asyncio.run(scenario())


def limits(requests: list) -> list[int]:
    return [r.json["max_tokens"] for r in requests]


def domain(events: list[Any], name: str) -> list[dict[str, Any]]:
    return [e.payload for e in events if e.kind == "domain" and e.name == name]


def test_a_react_agent_asks_a_cut_answer_again_once_with_more_room(tmp_path: Path) -> None:
    result, events, requests = run(tmp_path, REACT_WORKFLOW, ["truncated"])

    assert result.status.value == "COMPLETED"
    assert limits(requests) == [OUTPUT_TOKENS, OUTPUT_TOKENS * TRUNCATED_GROWTH]
    thoughts = domain(events, "agent.thought")
    assert [(t["iteration"], t["action"]) for t in thoughts] == [(1, "final")]
    out = next(e for e in events if e.kind == "step_finished").outputs
    assert out["note"] == "owls hoot at night"


def test_a_react_agent_takes_a_second_cut_answer_as_unreadable(tmp_path: Path) -> None:
    result, events, requests = run(tmp_path, REACT_WORKFLOW, ["truncated", "truncated"])

    assert result.status.value == "COMPLETED"
    # asked again once; the next turn starts at the agent's own limit again
    assert limits(requests) == [OUTPUT_TOKENS, OUTPUT_TOKENS * TRUNCATED_GROWTH, OUTPUT_TOKENS]
    thoughts = domain(events, "agent.thought")
    assert [(t["iteration"], t["action"]) for t in thoughts] == [(1, "unreadable"), (2, "final")]
    out = next(e for e in events if e.kind == "step_finished").outputs
    assert out["note"] == "owls hoot at night"


def test_the_orchestrator_asks_a_cut_decision_again_once_with_more_room(tmp_path: Path) -> None:
    result, events, requests = run(tmp_path, ADVISORY_WORKFLOW, ["truncated"])

    assert result.status.value == "COMPLETED"
    assert limits(requests)[:2] == [OUTPUT_TOKENS, OUTPUT_TOKENS * TRUNCATED_GROWTH]
    first = domain(events, "advisory.decision")[0]
    assert (first["proposed"], first["chosen"], first["fallback"]) == (
        "invoke helper",
        "invoke helper",
        False,
    )


def test_the_orchestrator_falls_back_on_a_second_cut_decision(tmp_path: Path) -> None:
    result, events, requests = run(tmp_path, ADVISORY_WORKFLOW, ["truncated", "truncated"])

    assert result.status.value == "COMPLETED"
    assert limits(requests)[:2] == [OUTPUT_TOKENS, OUTPUT_TOKENS * TRUNCATED_GROWTH]
    first = domain(events, "advisory.decision")[0]
    assert first["fallback"] and first["proposed"] == "unreadable"
    assert first["chosen"] == "invoke helper", "the plan's next agent"
