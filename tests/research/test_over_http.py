"""The same research run over real HTTP: the router talks to the loopback fault server, which answers
with the extractive model; injected 5xx faults push requests to the built-in provider (degraded)."""
from __future__ import annotations

import asyncio
from pathlib import Path

from router.config import RouterConfig
from router.fault_server import FaultServer, demo_router_config
from tests.research.conftest import run_research
from tests.research.test_trajectories import VETO_QUERY
from tui.wiring import extractive_responder

SCRIPT = {
    "time_scale": 1.0,
    "providers": {
        "openai": {"phases": [{"for_s": 0.4, "fault": "ok"}, {"for_s": 1.0, "fault": {"status": 503}},
                              {"for_s": 600, "fault": "ok"}]},
    },
}


def test_a_research_run_over_http_with_faults_completes_and_records_degraded(
        tmp_path: Path, pep_corpus_path: Path, workflow) -> None:
    async def scenario():
        server = FaultServer(script=SCRIPT, responder=extractive_responder())
        await server.start()
        try:
            config = RouterConfig.model_validate(demo_router_config(server.base_url, ["openai"]))
            query, extra = VETO_QUERY
            run = await run_research(workflow, tmp_path / "ws", pep_corpus_path, query, wiring={"config": config},
                                     **extra)
            return run, server.requests_for("openai")
        finally:
            await server.stop()

    run, requests = asyncio.run(scenario())
    assert run.result.status.value == "COMPLETED"
    assert requests, "the router reached the fault server over HTTP"
    reconciled = [p for p in run.domain("research.stage") if p["stage"] == "budget_reconcile"]
    by_openai = [p for p in reconciled if p["provider"] == "openai"]
    degraded = [p for p in reconciled if p["degraded"]]
    assert by_openai and not any(p["degraded"] for p in by_openai)
    assert degraded and all(p["provider"] != "openai" for p in degraded)
    assert run.domain("research.coalesced")[0]["selected_round"] == 1
    assert run.outputs("final_synthesis")["citations"]
