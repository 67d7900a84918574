"""Agents over real HTTP: the orchestrator's model is a provider behind the loopback fault
server answering adversarially, through the real router and the composition root's port.

Whatever the provider proposes — agents the workflow does not offer, the same agent again
and again, text that is not a decision — only offered agents run, the required ones run,
and every decision the provider was asked for is one the run recorded. The worker agents
use the built-in profile, so none of their calls reaches the provider at all.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents.builtin_model import react_reply
from agents.registration import register_agents
from agents.registry_loader import load_registry
from agents.tools import TOOL_IMPLEMENTATIONS
from engine.kahn import KahnEngine
from engine.loader import load_workflow
from engine.steps import StepRegistry
from router.build import build_router
from router.config import RouterConfig
from router.fault.demo import demo_router_config
from router.fault.server import FaultServer
from tui.launch import agents_wiring
from tui.launch.parts import RunParts
from tui.launch.run import open_run
from tui.launch.wiring import extractive_handlers
from tui.launch.workspace import Workspace
from workflows import WORKFLOWS_DIR

ANSWERS: list[Any] = [
    {"thought": "the archive first", "action": "invoke", "agent": "archivist"},
    {"thought": "again", "action": "invoke", "agent": "searcher"},
    "let me think about it",
    {"thought": "again", "action": "invoke", "agent": "searcher"},
    {"thought": "again", "action": "invoke", "agent": "searcher"},
    {"thought": "done", "action": "complete"},
]


def responder(task: str, inputs: dict[str, Any], raw: dict[str, Any]) -> Any:
    if task == "agent.orchestrate":
        return ANSWERS[min(int(inputs["iteration"]) - 1, len(ANSWERS) - 1)]
    if task == "agent.react":
        return react_reply(inputs)
    return "unexpected task"


def test_an_adversarial_orchestrator_over_http_stays_inside_the_offer(tmp_path: Path) -> None:
    user = tmp_path / "ws"
    (user / "agents").mkdir(parents=True)
    (user / "agents" / "orchestrator.yaml").write_text(
        "agents:\n  research_orchestrator:\n    role: Decides over HTTP.\n    model: fast\n"
        "    output: {decision: {type: string}}\n"
    )
    loaded = load_registry(
        [(WORKFLOWS_DIR, "shipped"), (user, "workspace")], TOOL_IMPLEMENTATIONS.names()
    )
    assert loaded.problems == []
    steps = StepRegistry()
    register_agents(loaded.registry, steps)
    workflow = load_workflow(WORKFLOWS_DIR / "research_assistant.yaml", registry=steps)

    async def scenario() -> tuple[Any, list[Any], list[Any]]:
        server = FaultServer(responder=responder)
        await server.start()
        try:
            section = demo_router_config(server.base_url, ["openai"])
            config = agents_wiring.with_agent_profiles(
                RouterConfig.model_validate(section), loaded.registry
            )
            router = build_router(config, stats_path=None, task_handlers=extractive_handlers())
            async with open_run(
                Workspace.at(user),
                workflow,
                inputs={"question": "How does the json module encode objects?"},
                parts=RunParts(router=router),
            ) as opened:
                result = await KahnEngine(registry=steps).execute(workflow, opened.context)
                events = opened.context.store.events(result.run_id)
            await router.aclose()
            return result, events, server.requests_for("openai", "chat")
        finally:
            await server.stop()

    result, events, requests = asyncio.run(scenario())
    assert result.status.value == "COMPLETED"
    out = next(e for e in events if e.kind == "step_finished").outputs
    assert set(out["agents_executed"]) <= {"searcher", "reader", "fact_checker", "writer"}
    assert {"searcher", "writer"} <= set(out["agents_executed"])
    assert out["agents_executed"].count("searcher") <= 2
    assert {r.task for r in requests} == {"agent.orchestrate"}, (
        "built-in-profile agents never reach a provider"
    )
    decisions = [e.payload for e in events if e.kind == "domain" and e.name == "advisory.decision"]
    assert len(decisions) == len(requests), "one provider request per decision"
    reasons = [d["reason"] for d in decisions]
    assert reasons[0].startswith("agent 'archivist' is not offered")
    assert any("already invoked 2 time(s)" in r for r in reasons)
    assert all(d["chosen"] != "invoke archivist" for d in decisions)
    violations = [e.rule for e in events if e.kind == "policy_violation"]
    assert "max_invocations_exceeded" in violations
