"""Context windows: a request that would not fit a model's window is never sent to it (the
attempt says why); callers learn the tightest window to fit their prompts to."""

from __future__ import annotations

import pytest

from router.config import DEFAULT_CHARS_PER_TOKEN, ProviderConfig
from router.fault_server import FaultServer
from router.models import ChatMessage, ChatRequest, ContextLimit

from .conftest import RouterFactory, Verdict, make_config, provider_entry

pytestmark = pytest.mark.timeout(60)


def asking(chars: int, max_tokens: int = 100) -> ChatRequest:
    return ChatRequest(
        task="verify",
        messages=[ChatMessage(role="user", content="x" * chars)],
        response_schema=Verdict,
        max_tokens=max_tokens,
    )


async def test_a_request_too_long_for_the_window_is_not_sent_and_says_why(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    entry = provider_entry(fault_server, "local", context_windows={"local-model": 1000})
    router = make_router(make_config([entry]))

    too_long = await router.complete(asking(4000))

    assert too_long.provider == "builtin"
    skipped = next(a for a in too_long.attempts if a.provider == "local")
    assert skipped.outcome == "skipped" and skipped.model == "local-model"
    assert "exceed local-model's context window of 1000" in skipped.detail
    assert "~2" in skipped.detail and "+ 100 answer tokens" in skipped.detail
    assert fault_server.requests_for("local", "chat") == []
    snap = next(s for s in router.snapshot() if s.name == "local")
    assert snap.failures_total == 0, "the provider did nothing wrong"

    fits = await router.complete(asking(400))

    assert fits.provider == "local"
    assert len(fault_server.requests_for("local", "chat")) == 1


async def test_the_tightest_window_of_the_models_a_tier_may_reach(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    wide = provider_entry(fault_server, "wide", context_windows={"wide-model": 100_000})
    narrow = provider_entry(
        fault_server, "narrow", context_windows={"narrow-model": 8000}, chars_per_token=3.0
    )
    unknown = provider_entry(fault_server, "unknown")
    router = make_router(make_config([wide, narrow, unknown]))

    assert router.context_limit(1) == ContextLimit(
        model="narrow-model", tokens=8000, chars_per_token=3.0
    )
    alone = make_router(make_config([unknown]))
    assert alone.context_limit(1) is None


def test_shipped_default_models_have_windows_and_configured_ones_win() -> None:
    ollama = ProviderConfig(name="ollama", kind="ollama_native", models={1: "llama3.2"})
    assert ollama.context_limit("llama3.2") == ContextLimit(
        model="llama3.2", tokens=4096, chars_per_token=DEFAULT_CHARS_PER_TOKEN
    )
    mine = ProviderConfig(
        name="ollama",
        kind="ollama_native",
        models={1: "llama3.2"},
        context_windows={"llama3.2": 32_768},
    )
    limit = mine.context_limit("llama3.2")
    assert limit is not None and limit.tokens == 32_768
    assert mine.context_limit("some-other-model") is None
