"""The same research run over real HTTP: the router talks to the loopback fault server, which answers
with the extractive model; faults the script injects on given requests push those calls to the built-in
provider (degraded), and a rate limit opens the breaker, which cools down, probes and closes.

Nothing here depends on how fast the machine is: the script counts requests (``sequence:``), and the
router runs on an injected clock that only the fallback answers move, so the number of calls the open
breaker keeps away from the provider is fixed by the arithmetic below.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from engine.events import Domain, ProviderState
from engine.model_answers import disclosure, tally
from router.build import build_router
from router.clock import ManualClock
from router.config import RouterConfig
from router.fault.demo import demo_router_config
from router.fault.server import FaultServer, RecordedRequest
from router.local import TaskHandlerRegistry
from router.models import ChatRequest
from tests.research.conftest import ResearchRun, run_research
from tests.research.test_trajectories import VETO_QUERY, assert_citations_faithful
from tui.launch.wiring import extractive_handlers, extractive_responder

SERVER_ERROR_AT = (
    5  # the provider's 5th chat request gets a 503: one failure, the breaker stays CLOSED
)
RATE_LIMITED_AT = 9  # its 9th gets a 429 with Retry-After: the breaker opens at once
RETRY_AFTER_S = 25.0
FALLBACK_STEP_S = 10.0  # router time that passes while the built-in provider answers one call
KEPT_OFF = 2  # fallbacks after the 429 before 25 s have passed: at +10 and +20 s still OPEN

SCRIPT = {
    "time_scale": 1.0,
    "providers": {
        "openai": {
            "sequence": [
                {"kind": "ok", "count": SERVER_ERROR_AT - 1},
                {"status": 503},
                {"kind": "ok", "count": RATE_LIMITED_AT - SERVER_ERROR_AT - 1},
                {"status": 429, "retry_after_s": RETRY_AFTER_S},
            ],
            "then": "ok",
        },
    },
}


def clocked_handlers(clock: ManualClock) -> TaskHandlerRegistry:
    """The extractive handlers, each answer moving the router's clock on by FALLBACK_STEP_S."""
    registry = extractive_handlers()
    for task in registry.tasks():
        handler = registry.get(task)
        assert handler is not None

        def answer(request: ChatRequest, handler: Any = handler) -> Any:
            result = handler(request)
            clock.advance(FALLBACK_STEP_S)
            return result

        registry.register(task, answer, replace=True)
    return registry


def test_a_research_run_over_http_degrades_exactly_where_faults_were_injected(
    tmp_path: Path, pep_corpus_path: Path, workflow
) -> None:
    async def scenario() -> tuple[ResearchRun, list[RecordedRequest]]:
        server = FaultServer(script=SCRIPT, responder=extractive_responder())
        await server.start()
        try:
            section = demo_router_config(server.base_url, ["openai"])
            section["policy"] = {
                "builtin_in_thread": False
            }  # the handlers advance the clock on its loop
            config = RouterConfig.model_validate(section)
            clock = ManualClock()
            router = build_router(
                config,
                stats_path=tmp_path / "ws",
                task_handlers=clocked_handlers(clock),
                clock=clock,
            )
            query, extra = VETO_QUERY
            run = await run_research(
                workflow,
                tmp_path / "ws",
                pep_corpus_path,
                query,
                wiring={"router": router},
                **extra,
            )
            return run, server.requests_for("openai")
        finally:
            await server.stop()

    run, requests = asyncio.run(scenario())
    assert run.result.status.value == "COMPLETED"

    chats = [r for r in requests if r.route == "chat"]
    faulted = [i for i, r in enumerate(chats) if r.fault != "ok"]
    assert faulted == [SERVER_ERROR_AT - 1, RATE_LIMITED_AT - 1]
    assert [chats[i].fault for i in faulted] == ["error-503", "error-429"]
    assert [r.route for r in requests].count("health") == 1, "one probe closed the breaker"

    calls = [p for p in run.domain("research.stage") if p["stage"] == "budget_reconcile"]
    degraded = [i for i, p in enumerate(calls) if p["degraded"]]
    expected = [SERVER_ERROR_AT - 1] + list(range(RATE_LIMITED_AT - 1, RATE_LIMITED_AT + KEPT_OFF))
    assert degraded == expected, [(p["task"], p["provider"], p["degraded"]) for p in calls]
    assert all(calls[i]["provider"] == "builtin" for i in degraded)
    assert [calls[i]["task"] for i in faulted] == [chats[i].task for i in faulted]
    # every other answer came from the provider over HTTP: one per request it answered with 200
    remote = [p for p in calls if not p["degraded"]]
    assert all(p["provider"] == "openai" for p in remote)
    assert len(calls) == len(chats) + KEPT_OFF
    assert Counter(p["task"] for p in remote) == Counter(r.task for r in chats if r.fault == "ok")

    snapshots = [
        e.snapshot for e in run.events if isinstance(e, ProviderState) and e.provider == "openai"
    ]
    states = [
        s["state"]
        for i, s in enumerate(snapshots)
        if i == 0 or s["state"] != snapshots[i - 1]["state"]
    ]
    assert states == ["CLOSED", "OPEN", "HALF_OPEN", "CLOSED"]
    opened = next(s for s in snapshots if s["state"] == "OPEN")
    assert opened["cooldown_remaining_s"] == RETRY_AFTER_S and opened["last_error"] == "rate_limit"

    assert run.domain("research.coalesced")[0]["selected_round"] == 1
    assert run.outputs("final_synthesis")["citations"]

    # the report says how much of it the built-in fallback wrote, as the headless summary does
    fallback_steps = [
        e.step_id
        for e in run.events
        if isinstance(e, Domain)
        and e.name == "research.stage"
        and e.payload["stage"] == "budget_reconcile"
        and e.payload["degraded"]
    ]
    synthesis = run.outputs("final_synthesis")
    answers = synthesis["quality"]["model_answers"]
    assert answers["builtin_fallback"] == len(degraded) and answers["total"] == len(calls)
    assert answers["fallback_steps"] == list(dict.fromkeys(fallback_steps))
    assert answers["note"] == disclosure(tally(run.events))
    assert f"> **{answers['note']}: the offline extractive model's work" in synthesis["report"]
    assert f"- Model answers: **{answers['note']}**" in synthesis["report"]


INVALID_ANALYSIS = '{"lens": "ai", "claims": "not a list of claims"}'


def test_invalid_model_answers_are_replaced_by_the_built_in_answer_marked_degraded(
    tmp_path: Path, pep_corpus_path: Path, workflow
) -> None:
    """The provider answers every analysis with JSON that misses the schema: the run still
    finishes, each of those calls is answered by the built-in model and marked degraded, and
    every claim of the report cites a passage that contains its quote."""
    built_in = extractive_responder()

    def responder(task: str, inputs: dict[str, Any], body: dict[str, Any]) -> str:
        return INVALID_ANALYSIS if task == "research.analyze" else built_in(task, inputs, body)

    async def scenario() -> tuple[ResearchRun, list[RecordedRequest]]:
        server = FaultServer(script={"providers": {"openai": {"then": "ok"}}}, responder=responder)
        await server.start()
        try:
            config = RouterConfig.model_validate(demo_router_config(server.base_url, ["openai"]))
            router = build_router(
                config, stats_path=tmp_path / "ws", task_handlers=extractive_handlers()
            )
            run = await run_research(
                workflow,
                tmp_path / "ws",
                pep_corpus_path,
                "formatted string literals",
                wiring={"router": router},
                domain="reference",
                max_rounds=1,
            )
            return run, server.requests_for("openai")
        finally:
            await server.stop()

    run, requests = asyncio.run(scenario())
    assert run.result.status.value == "COMPLETED"
    asked = [r for r in requests if r.route == "chat" and r.task == "research.analyze"]
    assert len(asked) >= 2, "both analysts asked the provider"
    calls = [p for p in run.domain("research.stage") if p["stage"] == "budget_reconcile"]
    analyses = [p for p in calls if p["task"] == "research.analyze"]
    assert analyses and all(p["degraded"] and p["provider"] == "builtin" for p in analyses)
    assert all(not p["degraded"] for p in calls if p["task"] != "research.analyze")
    # each replaced answer is the built-in model's work, and the report says so
    answers = run.outputs("final_synthesis")["quality"]["model_answers"]
    assert answers["builtin_fallback"] == len(analyses)
    assert sorted(answers["fallback_steps"]) == ["analyst_ai_r1", "analyst_swe_r1"]
    citations = run.outputs("final_synthesis")["citations"]
    assert citations
    assert assert_citations_faithful(run, pep_corpus_path) == len(citations)


def test_a_models_prose_is_the_answer_and_keeps_only_cited_sentences(
    tmp_path: Path, pep_corpus_path: Path, workflow
) -> None:
    """A provider that writes prose for the synthesis: the report is its prose (no extractive
    brief), each kept sentence closes with the report's citation numbers, and a sentence citing
    no claim it was given is left out and counted."""
    import json

    built_in = extractive_responder()

    def responder(task: str, inputs: dict[str, Any], body: dict[str, Any]) -> Any:
        answer = built_in(task, inputs, body)
        if task != "research.synthesize":
            return answer
        data = json.loads(answer) if isinstance(answer, str) else dict(answer)
        for section in data["sections"]:
            section["prose"] = " ".join(
                f"The evidence says so [{claim_id}]." for claim_id in section["claim_ids"]
            ) + (" Everyone agrees." if section["claim_ids"] else "")
        return data

    async def scenario() -> ResearchRun:
        server = FaultServer(script={"providers": {"openai": {"then": "ok"}}}, responder=responder)
        await server.start()
        try:
            config = RouterConfig.model_validate(demo_router_config(server.base_url, ["openai"]))
            router = build_router(
                config, stats_path=tmp_path / "ws", task_handlers=extractive_handlers()
            )
            return await run_research(
                workflow,
                tmp_path / "ws",
                pep_corpus_path,
                "What are assignment expressions?",
                wiring={"router": router},
                max_rounds=1,
            )
        finally:
            await server.stop()

    run = asyncio.run(scenario())
    synthesis = run.outputs("final_synthesis")
    report = synthesis["report"]
    assert synthesis["citations"] and "Evidence brief" not in report
    assert "The evidence says so. [1]" in report
    assert "Everyone agrees" not in report.split("## Sources")[0]
    assert "sentence(s) of the model's prose cited no claim" in report
    assert assert_citations_faithful(run, pep_corpus_path) == len(synthesis["citations"])
