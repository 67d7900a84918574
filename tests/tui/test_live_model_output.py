"""Live model output end to end: the app runs a workflow whose step asks a model through the
router (``kind: openai`` on loopback) and the running step's detail shows the answer as it
streams, then the final answer.

Real parts: the Textual app through Pilot, the ``Workbench`` run job on the engine, the router
over HTTP to the loopback fault server streaming OpenAI SSE, a real SQLite run store and corpus.
The server's ``hold`` fault keeps the stream half-sent until the test releases it, so "before
the call finishes" is a state the test controls, not a race.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.states import StepStatus
from research.corpus import Corpus
from research.extractive import scope
from router.config import load_router_config
from router.fault.server import FaultServer
from tests.tui.pilot_wait import press, until
from tui.app.app import WorkbenchApp
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.find_bar import plain_text
from tui.config import WorkbenchConfig
from tui.launch.parts import RunParts
from tui.launch.workbench import Workbench

pytestmark = pytest.mark.timeout(120)

SIZE = (150, 46)
QUESTION = "How does the asyncio event loop schedule tasks?"
KEY = "sk-loopback-live-test"


def planner(task: str, inputs: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """The remote model: a plan, as the built-in planner would write it (a long JSON answer,
    streamed in many chunks)."""
    assert task == "research.scope", task
    return scope(inputs).model_dump(mode="json")


@pytest.fixture
async def server() -> AsyncIterator[FaultServer]:
    script = {"providers": {"openai": {"fault": "hold", "auth": "required"}}}
    async with FaultServer(script, responder=planner) as fault_server:
        yield fault_server


def workflow(folder: Path) -> Path:
    path = folder / "plan_only.yaml"
    data = {
        "name": "plan_only",
        "version": 1,
        "inputs": {"query": {"type": "string", "required": True}},
        "steps": [
            {"id": "plan", "uses": "research.intake_scope", "inputs": {"query": "inputs.query"}}
        ],
        "outputs": {"sub_questions": "steps.plan.outputs.sub_questions"},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def workbench_on(server: FaultServer, root: Path) -> Workbench:
    router = load_router_config(
        {
            "providers": [
                {
                    "name": "openai",
                    "kind": "openai",
                    "base_url": f"{server.url('openai')}/v1",
                    "model": "gpt-test",
                    "api_key_env": "OPENAI_API_KEY",
                }
            ]
        },
        "test",
    )
    return Workbench(
        workspace=root,
        shipped_dir=root / "none",
        config=WorkbenchConfig(router=router),
        parts=RunParts(corpus=Corpus(root / "corpus.sqlite"), environ={"OPENAI_API_KEY": KEY}),
    )


def live_text(app: WorkbenchApp) -> str:
    screen = app.screen
    if not isinstance(screen, StepDetailScreen):
        return ""
    return plain_text(screen.query_one("#detail-live"))


async def test_the_running_steps_detail_shows_the_model_output_as_it_streams(
    tmp_path: Path, server: FaultServer
) -> None:
    workbench = workbench_on(server, tmp_path)
    app = WorkbenchApp(workbench)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            job = workbench.new_run_job(workflow(tmp_path), {"query": QUESTION})
            screen = app.start_job(job)
            assert isinstance(screen, RunScreen)
            await until(pilot, lambda: server.held == 1)
            await until(
                pilot,
                lambda: (
                    "plan" in screen.view.steps
                    and screen.view.steps["plan"].status is StepStatus.RUNNING
                ),
            )
            await press(pilot, "enter", lambda: isinstance(app.screen, StepDetailScreen))
            detail = app.screen
            assert isinstance(detail, StepDetailScreen) and detail.step.id == "plan"

            # half the answer has arrived and the server holds the rest: the detail shows it
            await until(pilot, lambda: "streaming…" in live_text(app) and "{" in live_text(app))
            heading, partial = live_text(app).split("\n", 1)
            assert heading == "call 1 · openai  streaming…"
            assert partial.startswith('{"subject"')
            assert server.held == 1, "the call has not finished"
            running = workbench.store().step_results(job.run_id)["plan"]
            assert (running.status, running.outputs) == (StepStatus.RUNNING, {})

            server.release_held()
            await until(pilot, lambda: "done" in live_text(app).split("\n", 1)[0])
            final = live_text(app).split("\n", 1)[1]
            assert len(final) > len(partial) and final.startswith(partial)
            answer = json.loads(final)
            assert answer == planner("research.scope", {"query": QUESTION}, {})
            await until(
                pilot,
                lambda: (
                    workbench.store().step_results(job.run_id)["plan"].status
                    is StepStatus.SUCCEEDED
                ),
            )
            stored = workbench.store().step_results(job.run_id)["plan"].outputs
            assert [q["text"] for q in stored["sub_questions"]] == [
                q["text"] for q in answer["sub_questions"]
            ]
            [chat] = server.requests_for("openai", "chat")
            assert chat.json["stream"] is True
            assert chat.headers["authorization"] == f"Bearer {KEY}"
    finally:
        workbench.close()
