"""A malicious OpenAI-compatible server on loopback against the router (issue 27, item 3).

The server is the fault server playing its hostile answers (router/fault/hostile.py): bombs that
inflate a body or one SSE line to many times the bound, streams that never end, SSE comments
and nothing else, trickling, huge JSON, text that is not UTF-8, escape sequences. Each case
asserts the outcome the router reports (the error class and which bound was passed: the work
done is bounded by it), the memory the reading cost (``tracemalloc`` in this process, whose
peak would hold the whole inflated answer without the bounds) and that the provider counts as
faulty — never healthy. Time budgets run on the router's injected clock; nothing waits on the
wall clock.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from engine.live import LiveChannel, ModelOutput, OutputCoalescer
from plumbing.answer_bound import MAX_ANSWER_CHARS
from router.build import build_router
from router.clock import ManualClock
from router.config import ConfigError, ProviderConfig, RouterConfig
from router.errors import ErrorClass, ProviderCallError
from router.fault.server import FaultServer
from router.local import TaskHandlerRegistry
from router.models import BreakerState, ChatMessage, ChatRequest
from router.providers.base import spec_from_request
from router.providers.http import HttpProvider
from router.router import SmartModelRouter
from router.streaming import StreamEvent, streaming_to
from tests.router.conftest import (
    builtin_answer,
    fault_answer,
    make_config,
    provider_entry,
    request,
    until,
)

pytestmark = pytest.mark.timeout(120)

MIB = 1024 * 1024
SMALL_BOUNDS: dict[str, Any] = {
    "max_body_mb": 1,
    "max_line_mb": 0.25,
    "max_stream_mb": 2,
    "max_answer_chars": 200_000,
}
"""Bounds far below the attacks' sizes (64 MiB), so each case is cheap and its peak telling."""
PEAK_BOUND = 12 * MIB
"""What reading one attack may cost this process at most: a few times the bounds above, a
fraction of what the attack holds unbounded (64 MiB and more)."""


RouterFactory = Callable[[RouterConfig], SmartModelRouter]


@pytest.fixture
async def server() -> AsyncIterator[FaultServer]:
    async with FaultServer(responder=fault_answer) as running:
        yield running


@pytest.fixture
async def routers() -> AsyncIterator[RouterFactory]:
    """Routers over the real HTTP providers on a manual clock, closed after the test."""
    handlers = TaskHandlerRegistry()
    handlers.register("verify", builtin_answer)
    handlers.register("chat", lambda req: "builtin says hi")
    made: list[SmartModelRouter] = []

    def factory(config: RouterConfig) -> SmartModelRouter:
        made.append(
            build_router(config, stats_path=None, task_handlers=handlers, clock=ManualClock())
        )
        return made[-1]

    yield factory
    for router in made:
        await router.aclose()


@contextmanager
def peak_memory() -> Iterator[list[int]]:
    """The peak of Python's allocations inside the block (``[peak]`` once it ends)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    box: list[int] = []
    try:
        yield box
    finally:
        box.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def evil(server: FaultServer, **settings: Any) -> dict[str, Any]:
    """The hostile provider's config entry: keyless, as a local server is."""
    return provider_entry(server, "evil", api_key_env=None, **{"timeout_s": 60.0, **settings})


def hostile(server: FaultServer, fault: Any, **bounds: Any) -> Any:
    server.set_script({"providers": {"evil": {"fault": fault}}})
    return make_config([evil(server, **bounds)])


async def streamed(router: Any) -> tuple[Any, list[StreamEvent]]:
    events: list[StreamEvent] = []
    response = await router.stream(request(), events.append)
    return response, events


def failure_of(response: Any) -> tuple[str | None, str]:
    (attempt,) = [a for a in response.attempts if a.provider == "evil"]
    return attempt.error_class, attempt.detail


def breaker_of(router: Any) -> BreakerState:
    (snapshot,) = [s for s in router.snapshot() if s.name == "evil"]
    return BreakerState(snapshot.state)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_bomb_of_a_body_stops_at_the_body_bound_and_trips_the_breaker(
    encoding: str, server: FaultServer, routers: RouterFactory
) -> None:
    fault = {"kind": "huge", "size_mb": 64, "encoding": encoding}
    router = routers(hostile(server, fault, **SMALL_BOUNDS))

    with peak_memory() as peak:
        response = await router.complete(request())

    assert response.provider == "builtin" and response.degraded
    error_class, detail = failure_of(response)
    assert error_class == "oversized" and "max_body_mb (1 MiB, inflated)" in detail
    assert peak[0] < PEAK_BOUND, f"reading the bomb cost {peak[0] / MIB:.0f} MiB"
    assert breaker_of(router) is BreakerState.OPEN  # faulty at once, never healthy


async def test_a_bomb_on_the_models_endpoint_is_faulty_not_healthy(
    server: FaultServer, routers: RouterFactory
) -> None:
    server.set_script(
        {"providers": {"evil": {"health": {"kind": "huge", "size_mb": 64, "encoding": "gzip"}}}}
    )
    router = routers(make_config([evil(server, **SMALL_BOUNDS)]))

    with peak_memory() as peak:
        (check,) = await router.check_health()

    assert not check.ok and check.error_class == "oversized"
    assert check.detail == "HTTP 200: the body passed max_body_mb (1 MiB, inflated)"
    assert peak[0] < PEAK_BOUND, f"checking the bomb cost {peak[0] / MIB:.0f} MiB"


async def test_a_bomb_of_one_sse_line_stops_at_the_line_bound(
    server: FaultServer, routers: RouterFactory
) -> None:
    fault = {"kind": "huge", "size_mb": 64, "encoding": "gzip"}
    router = routers(hostile(server, fault, **SMALL_BOUNDS))

    with peak_memory() as peak:
        response, events = await streamed(router)

    assert response.provider == "builtin"
    error_class, detail = failure_of(response)
    assert error_class == "oversized" and "max_line_mb (0.25 MiB, inflated)" in detail
    assert peak[0] < PEAK_BOUND, f"reading the bomb cost {peak[0] / MIB:.0f} MiB"
    assert not [e for e in events if e.provider == "evil" and e.kind == "text"]


async def test_an_endless_stream_stops_at_the_answer_bound_with_one_line_and_no_traceback(
    server: FaultServer, routers: RouterFactory, caplog: pytest.LogCaptureFixture
) -> None:
    router = routers(hostile(server, "endless", **SMALL_BOUNDS))
    caplog.set_level(logging.DEBUG)

    with peak_memory() as peak:
        response, events = await streamed(router)

    assert response.provider == "builtin"
    error_class, detail = failure_of(response)
    assert error_class == "oversized"
    assert detail == "the answer passed max_answer_chars (200,000 characters)"
    shown = sum(len(e.text) for e in events if e.provider == "evil" and e.kind == "text")
    assert 0 < shown <= 200_000
    assert [e.kind for e in events if e.provider == "evil"][-1] == "abort"
    assert peak[0] < PEAK_BOUND, f"the endless stream cost {peak[0] / MIB:.0f} MiB"
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert breaker_of(router) is BreakerState.OPEN


async def test_sse_comments_and_nothing_else_stop_at_the_stream_bound(
    server: FaultServer, routers: RouterFactory
) -> None:
    router = routers(hostile(server, "comments", **SMALL_BOUNDS))

    response, _ = await streamed(router)

    error_class, detail = failure_of(response)
    assert error_class == "oversized" and "max_stream_mb (2 MiB, inflated)" in detail


@pytest.mark.parametrize("streams", [False, True], ids=["body", "stream"])
async def test_huge_json_stops_at_its_bound(
    streams: bool, server: FaultServer, routers: RouterFactory
) -> None:
    router = routers(hostile(server, {"kind": "huge", "size_mb": 64}, **SMALL_BOUNDS))

    with peak_memory() as peak:
        response = (await streamed(router))[0] if streams else await router.complete(request())

    error_class, detail = failure_of(response)
    bound = "max_line_mb" if streams else "max_body_mb"
    assert error_class == "oversized" and bound in detail
    assert peak[0] < PEAK_BOUND, f"the huge answer cost {peak[0] / MIB:.0f} MiB"


async def test_an_answer_past_its_character_bound_fails_whole_or_streamed(
    server: FaultServer, routers: RouterFactory
) -> None:
    bounds = {**SMALL_BOUNDS, "max_body_mb": 4, "max_line_mb": 4}
    router = routers(hostile(server, {"kind": "huge", "size_mb": 1}, **bounds))

    whole = await router.complete(request())
    fresh = routers(hostile(server, {"kind": "huge", "size_mb": 1}, **bounds))  # the other is OPEN
    streamed_answer, _ = await streamed(fresh)

    for response in (whole, streamed_answer):
        error_class, detail = failure_of(response)
        assert error_class == "oversized" and "max_answer_chars (200,000 characters)" in detail


def chat_spec() -> Any:
    messages = [ChatMessage(role="user", content="Is the claim supported?")]
    return spec_from_request(ChatRequest(task="chat", messages=messages), "m", messages, 64)


@pytest.mark.parametrize("streams", [False, True], ids=["body", "stream"])
async def test_a_trickling_server_is_cut_by_the_trickle_budget_on_the_routers_clock(
    streams: bool, server: FaultServer
) -> None:
    server.set_script({"providers": {"evil": {"fault": {"kind": "trickle", "every_s": 3600}}}})
    clock = ManualClock()
    cfg = ProviderConfig.model_validate(evil(server, timeout_s=3600.0, trickle_timeout_s=10.0))

    async def call(provider: HttpProvider) -> Any:
        if not streams:
            return await provider.chat(chat_spec(), 3600.0)
        with streaming_to(lambda event: None):
            return await provider.chat(chat_spec(), 3600.0)

    async with httpx.AsyncClient() as client:
        answer = asyncio.ensure_future(call(HttpProvider(cfg, client, clock)))
        await until(lambda: clock.pending_sleepers == 1, "a byte arrived and the budget runs")
        clock.advance(9.9)
        await asyncio.sleep(0.01)
        assert not answer.done()  # within its budget the line may still come
        clock.advance(0.2)
        with pytest.raises(ProviderCallError) as failed:
            await answer
    assert failed.value.error_class is ErrorClass.TIMEOUT
    assert "trickled" in failed.value.detail and "trickle_timeout_s (10 s)" in failed.value.detail


async def test_text_that_is_not_utf8_is_a_bad_body_or_replaced_in_a_stream(
    server: FaultServer, routers: RouterFactory
) -> None:
    router = routers(hostile(server, "bad_utf8"))

    whole = await router.complete(request("chat", schema=None))
    streamed_answer, _ = await streamed_text(router)

    assert failure_of(whole) == ("bad_response", "HTTP 200 with a body that is not JSON")
    assert streamed_answer.provider == "evil"  # a stream is decoded as SSE says: replaced
    assert "ok \ufffd\ufffd\ufffd( bad" in streamed_answer.content


async def streamed_text(router: Any) -> tuple[Any, list[StreamEvent]]:
    events: list[StreamEvent] = []
    response = await router.stream(request("chat", schema=None), events.append)
    return response, events


async def test_escape_sequences_in_an_answer_reach_the_caller_as_text(
    server: FaultServer, routers: RouterFactory
) -> None:
    payload = "answer \x1b]52;c;U0VDLUNMSVA=\x07 \x1b]0;SEC-TITLE\x07 \x1b[2J end"
    server.set_script({"providers": {"evil": {"fault": {"kind": "ok", "text": payload}}}})
    router = routers(make_config([evil(server)]))

    whole = await router.complete(request("chat", schema=None))
    streamed_answer, _ = await streamed_text(router)

    assert whole.content == payload and streamed_answer.content == payload


async def test_only_codings_the_router_inflates_within_bounds_are_asked_for_or_read(
    server: FaultServer, routers: RouterFactory
) -> None:
    fault = {"kind": "ok", "encoding": "gzip", "headers": {"content-encoding": "zstd"}}
    router = routers(hostile(server, fault))

    response = await router.complete(request())

    assert failure_of(response) == (
        "bad_response",
        "HTTP 200: answered in content-encoding zstd, which was not asked for",
    )
    (sent,) = server.requests_for("evil", "chat")
    assert sent.headers["accept-encoding"] == "gzip, deflate"


async def test_a_compressed_answer_within_the_bounds_is_read_whole(
    server: FaultServer, routers: RouterFactory
) -> None:
    for encoding in ("gzip", "deflate"):
        router = routers(hostile(server, {"kind": "ok", "encoding": encoding}))
        whole = await router.complete(request())
        streamed_answer, _ = await streamed(router)
        assert whole.provider == streamed_answer.provider == "evil"
        assert whole.parsed == streamed_answer.parsed


def test_the_answer_bound_cannot_pass_what_the_engine_holds() -> None:
    with pytest.raises(ConfigError) as refused:
        make_config(
            [
                {
                    "name": "p",
                    "kind": "openai",
                    "model": "m",
                    "max_answer_chars": MAX_ANSWER_CHARS + 1,
                }
            ]
        )
    assert str(refused.value).startswith("test: router.providers[0].max_answer_chars:")
    defaults = ProviderConfig(name="p", kind="openai", model="m")
    assert (defaults.max_body_mb, defaults.max_line_mb, defaults.max_stream_mb) == (16, 4, 64)
    assert defaults.max_answer_chars == MAX_ANSWER_CHARS and defaults.trickle_timeout_s == 10


def test_providers_check_reports_a_bomb_on_models_as_faulty_in_one_line(tmp_path: Path) -> None:
    script = {"providers": {"evil": {"health": "bomb"}}}
    with FaultServer.running(script=script) as server:
        config = tmp_path / "config.yaml"
        entry = evil(server)
        config.write_text(yaml.safe_dump({"router": {"providers": [entry]}}), encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "tui.cli", "--workspace", str(tmp_path)]
            + ["--config", str(config), "providers", "check"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
            timeout=120,
        )
    assert done.returncode == 1, done.stderr
    (row,) = [line for line in done.stdout.splitlines() if "evil" in line]
    assert "FAIL" in row and "the body passed max_body_mb (16 MiB, inflated)" in row
    assert "Traceback" not in done.stdout + done.stderr


def test_the_live_view_of_a_streaming_call_holds_no_more_than_an_answer_may_be() -> None:
    channel = LiveChannel()
    shown: list[ModelOutput] = []
    channel.subscribe(shown.append)
    output = OutputCoalescer(channel, run_id="r", step_id="s", iteration=0, call_index=0)
    piece = "x" * (MAX_ANSWER_CHARS // 4 + 1)

    output.on_event("start", "evil", "")
    for _ in range(8):
        output.on_event("text", "evil", piece)
    output.close()

    assert len(shown[-1].text) == MAX_ANSWER_CHARS  # the router's ceiling, not twice it
    assert ProviderConfig.model_fields["max_answer_chars"].default == MAX_ANSWER_CHARS


async def test_an_endless_head_stops_at_the_http_clients_header_bound(
    server: FaultServer, routers: RouterFactory
) -> None:
    """httpcore's HTTP/1.1 parser holds at most 100 KiB of an unfinished head (its
    ``MAX_INCOMPLETE_EVENT_SIZE``): a head that never ends fails there."""
    router = routers(hostile(server, "endless_head"))

    with peak_memory() as peak:
        response = await router.complete(request())

    assert response.provider == "builtin"
    error_class, detail = failure_of(response)
    assert (error_class, detail) == ("connection", "RemoteProtocolError")
    assert peak[0] < PEAK_BOUND, f"the huge head cost {peak[0] / MIB:.0f} MiB"


async def test_a_redirect_is_never_followed_so_the_key_goes_nowhere_else(
    server: FaultServer, routers: RouterFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIL_KEY", "sk-redirect-canary")
    async with FaultServer(responder=fault_answer) as elsewhere:
        target = f"{elsewhere.url('elsewhere')}/v1/chat/completions"
        fault = {"kind": "error", "status": 307, "headers": {"location": target}}
        server.set_script({"providers": {"evil": {"fault": fault}}})
        entry = provider_entry(server, "evil", api_key_env="EVIL_KEY", timeout_s=60.0)
        router = routers(make_config([entry]))

        response = await router.complete(request())

        assert response.provider == "builtin"
        error_class, detail = failure_of(response)
        assert error_class == "permanent" and detail.startswith("HTTP 307"), detail
        assert elsewhere.requests == []  # neither the request nor its key went there
