"""An advisory run to kill: executed in a subprocess by test_agent_resume.py, then SIGKILLed.

``python -m tests.agents.agent_crash_worker DB RUN_ID TOOLS MODELS`` runs the
test advisory workflow on the SQLite store DB; TOOLS and MODELS are files each
real tool execution and model call append a line to. With
``AGENT_CRASH_BLOCK=N`` the tool execution after the N-th blocks forever.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from agents.services import AgentServices
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.services import ServiceRegistry
from engine.spec import WorkflowDefinition
from engine.steps import StepRegistry
from engine.store import RunStore
from tests.agents.agent_helpers import (
    ADVISORY_WORKFLOW,
    AnswerPort,
    ScriptedModel,
    load,
    make_registry,
    steps_for,
)
from tests.engine.kahn_helpers import CallCounter


def setup() -> tuple[StepRegistry, WorkflowDefinition]:
    steps = steps_for(make_registry())
    return steps, load(ADVISORY_WORKFLOW, steps)


def context(store: RunStore, run_id: str, tools: str, models: str) -> RunContext:
    return RunContext(
        store=store,
        run_id=run_id,
        inputs={"topic": "owls"},
        model=ScriptedModel(counter=Path(models)),
        services=ServiceRegistry(AgentServices(port=AnswerPort()), CallCounter(Path(tools))),
    )


def main(db: str, run_id: str, tools: str, models: str) -> None:
    steps, wf = setup()
    store = RunStore(db)
    asyncio.run(KahnEngine(registry=steps).execute(wf, context(store, run_id, tools, models)))


if __name__ == "__main__":
    main(*sys.argv[1:5])
