"""A truncated answer is a flagged result, not a provider failure: each API's own stop signal
(scripted by the loopback fault server) comes back as ``truncated=True``, streamed or not, and a
structured answer cut mid-JSON reaches the caller unparsed instead of failing over."""

from __future__ import annotations

from typing import Any

import pytest

from router.fault_server import FaultServer
from router.models import BreakerState

from .conftest import RouterFactory, make_config, request
from .test_streaming import KINDS, entry

pytestmark = pytest.mark.timeout(60)


async def answer(router: Any, streamed: bool, **kwargs: Any) -> Any:
    if streamed:
        return await router.stream(request(**kwargs), lambda event: None)
    return await router.complete(request(**kwargs))


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_cut_answer_is_flagged_and_kept_off_the_health_record(
    kind: str, streamed: bool, fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {kind: {"sequence": ["truncated"]}}})
    router = make_router(make_config([entry(fault_server, kind, kind)]))

    cut = await answer(router, streamed, max_tokens=64)
    whole = await answer(router, streamed, max_tokens=128)

    assert cut.provider == kind and cut.truncated and cut.parsed is None
    assert whole.provider == kind and not whole.truncated and whole.parsed is not None
    assert len(cut.content) < len(whole.content)
    snap = next(s for s in router.snapshot() if s.name == kind)
    assert snap.state is BreakerState.CLOSED and snap.failures_total == 0


async def test_a_cut_answer_without_a_schema_is_returned_as_text(
    fault_server: FaultServer, make_router: RouterFactory, keys: dict
) -> None:
    fault_server.set_script({"providers": {"openai": {"sequence": ["truncated"]}}})
    router = make_router(make_config([entry(fault_server, "openai", "openai")]))

    cut = await router.complete(request(schema=None))

    assert cut.truncated and cut.provider == "openai" and cut.content
