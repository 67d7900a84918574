"""Context windows: a request that would not fit a model's window is never sent to it (the
attempt says why); callers learn the tightest window to fit their prompts to."""

from __future__ import annotations

import pytest

from router.config import DEFAULT_CHARS_PER_TOKEN, ProviderConfig, load_router_config
from router.fault.server import FaultServer
from router.models import ChatMessage, ChatRequest, ChatResponse, ContextLimit, Usage
from router.wire import prompt_tokens_in_window, request_chars

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


async def test_the_tightest_window_is_the_one_holding_the_fewest_prompt_characters(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    """Tokens and characters per token both count: 1001 x 4.0 = 4004 characters hold less
    prompt than 500 x 8.01 = 4005, although the second window has half the tokens."""
    first = provider_entry(
        fault_server, "first", context_windows={"first-model": 1001}, chars_per_token=4.0
    )
    second = provider_entry(
        fault_server, "second", context_windows={"second-model": 500}, chars_per_token=8.01
    )
    router = make_router(make_config([first, second]))
    assert router.context_limit(1) == ContextLimit(
        model="first-model", tokens=1001, chars_per_token=4.0
    )


async def test_more_room_stays_inside_the_window_of_the_requests_profile(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    """A request for the ``tight`` profile may reach its small model: asked again with more
    room, it gets no more than that model's window leaves beside the prompt."""
    entry = provider_entry(
        fault_server, "main", context_windows={"main-model": 100_000, "main-small": 735}
    )
    config = load_router_config(
        {"providers": [entry], "profiles": {"tight": {"provider": "main", "model": "main-small"}}},
        "test",
    )
    router = make_router(config)
    asked = asking(400, max_tokens=300).model_copy(update={"profile": "tight"})
    small = ContextLimit(model="main-small", tokens=735, chars_per_token=DEFAULT_CHARS_PER_TOKEN)
    room = small.tokens - prompt_tokens_in_window(small, asked, request_chars(asked))
    assert 300 < room < 600  # tighter than doubling, looser than what the cut answer had
    cut = ChatResponse(
        content="{",
        provider="main",
        model="main-small",
        usage=Usage(output_tokens=300),
        truncated=True,
    )
    assert router.more_room(asked, cut) == asked.model_copy(update={"max_tokens": room})
    plain = asked.model_copy(update={"profile": None})
    assert router.more_room(plain, cut) == plain.model_copy(update={"max_tokens": 600})


async def test_by_default_the_window_is_the_first_tiers(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    """A tier-2 model's smaller window is not in the way of a tier-1 request (the default)."""
    entry = provider_entry(
        fault_server,
        "p",
        models={1: "p-small", 2: "p-big"},
        context_windows={"p-small": 8000, "p-big": 4000},
    )
    router = make_router(make_config([entry]))
    assert router.context_limit() == ContextLimit(
        model="p-small", tokens=8000, chars_per_token=DEFAULT_CHARS_PER_TOKEN
    )
    assert router.context_limit(2) == ContextLimit(
        model="p-big", tokens=4000, chars_per_token=DEFAULT_CHARS_PER_TOKEN
    )
