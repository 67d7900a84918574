"""Canary: an API key never appears in snapshots, logs, events, exceptions, stats or config dumps."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from router.config import ConfigError, load_router_config, router_config_from_env
from router.errors import RouterError
from router.fault.server import FaultServer
from router.models import ProviderSnapshot

from .conftest import CANARY_KEYS, RouterFactory, make_config, provider_entry, request

KINDS = ["openai", "azure", "github", "anthropic", "gemini"]


def assert_clean(text: str, where: str) -> None:
    for name, key in CANARY_KEYS.items():
        assert key not in text, f"{name} leaked into {where}"
        assert key[4:16] not in text, f"part of {name} leaked into {where}"


async def test_keys_never_leak(
    fault_server: FaultServer,
    make_router: RouterFactory,
    keys: dict,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    fault_server.set_script(
        {
            "providers": {
                "openai": {"sequence": [{"status": 401}]},
                "azure": {"sequence": [{"status": 429, "retry_after_s": 1}, "malformed"]},
                "github": {"sequence": [{"status": 403}]},
                "anthropic": {"sequence": ["overloaded", {"status": 500}, "down"]},
                "gemini": {"sequence": [{"status": 429, "quota": "daily"}, {"status": 400}]},
            }
        }
    )
    config = make_config([provider_entry(fault_server, k, kind=k) for k in KINDS])
    router = make_router(config, stats_path=tmp_path)
    events: list[ProviderSnapshot] = []
    router.subscribe(events.append)
    responses = [await router.complete(request()) for _ in range(12)]
    errors: list[str] = []
    try:
        await router.complete(request(task="no_such_task"))
    except RouterError as exc:
        errors += [str(exc), repr(exc)]
    checks = await router.check_health()
    await router.flush_stats()

    # the keys did reach the providers: the test would prove nothing otherwise
    sent = " ".join(str(r.headers) for r in fault_server.requests)
    assert CANARY_KEYS["OPENAI_API_KEY"] in sent and CANARY_KEYS["GEMINI_API_KEY"] in sent

    assert_clean(" ".join(s.model_dump_json() for s in router.snapshot()), "snapshots")
    assert_clean(" ".join(e.model_dump_json() for e in events), "events")
    assert_clean(" ".join(r.model_dump_json() for r in responses), "responses and attempts")
    assert_clean(" ".join(errors), "exceptions")
    assert_clean(repr(checks), "health checks")
    assert_clean(caplog.text, "logs")
    assert_clean(repr(config) + config.model_dump_json(), "config")
    await router.aclose()
    for path in tmp_path.iterdir():
        assert_clean(path.read_bytes().decode("latin-1"), f"stats file {path.name}")


def test_env_config_holds_names_not_keys(keys: dict) -> None:
    config = router_config_from_env(
        dict(CANARY_KEYS, AZURE_OPENAI_ENDPOINT="https://x.openai.azure.com")
    )
    assert {p.api_key_env for p in config.providers} >= set(CANARY_KEYS)
    assert_clean(repr(config) + config.model_dump_json(), "env config")


def test_a_key_pasted_into_config_is_never_echoed() -> None:
    key = CANARY_KEYS["OPENAI_API_KEY"]
    for bad in (
        {"providers": [{"name": "o", "kind": "openai", "model": "m", "api_key_env": key}]},
        {"providers": [{"name": "o", "kind": "openai", "model": "m", "api_key": key}]},
        {
            "providers": [
                {"name": "o", "kind": "openai", "model": "m", "base_url": f"https://u:{key}@h"}
            ]
        },
    ):
        with pytest.raises(ConfigError) as caught:
            load_router_config(bad, "config.yaml")
        assert_clean(str(caught.value), "config error")
        assert "config.yaml: router.providers[0]." in str(caught.value)
