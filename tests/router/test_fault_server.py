"""The fault server itself: script parsing, fault timing, time scale, limits, recording, threaded use."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from router.fault.demo import demo_router_config
from router.fault.playback import ProviderState as _ProviderState
from router.fault.script import DEFAULT_SCRIPT_PATH, Fault, FaultScriptError, load_fault_script
from router.fault.server import FaultServer

from .conftest import fault_answer


def test_shorthands() -> None:
    assert Fault.model_validate("ok").kind == "ok"
    assert Fault.model_validate(503).status == 503
    assert Fault.model_validate("429").kind == "error"
    assert Fault.model_validate("rate_limit").retry_after_s == 2.0
    assert Fault.model_validate("overloaded").overloaded
    assert Fault.model_validate({"status": 500, "count": 3}).count == 3
    assert Fault.model_validate("slow").kind == "slow_body"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"providers": {"a": {"fault": "explode"}}}, "providers.a.fault: unknown fault 'explode'"),
        (
            {"providers": {"a": {"fault": "down", "sequence": ["ok"]}}},
            "use one of fault, sequence or phases",
        ),
        ({"providers": {"a": {"fault": {"kind": "error"}}}}, "needs status: 3xx, 4xx or 5xx"),
        (
            {"providers": {"a": {"phases": [{"for_s": 0, "fault": "ok"}]}}},
            "providers.a.phases[0].for_s",
        ),
        (
            {"providers": {"a": {"sequence": ["ok"], "colour": "red"}}},
            "providers.a.colour: unknown key",
        ),
        ({"time_scale": 0}, "time_scale: Input should be greater than 0"),
        ({"providers": {"a/b": {}}}, "must be one path segment"),
    ],
)
def test_script_errors_name_the_key(data: dict, message: str) -> None:
    with pytest.raises(FaultScriptError) as caught:
        load_fault_script(data, "chaos.yaml")
    assert str(caught.value).startswith("chaos.yaml: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_script_file_errors(tmp_path: Path) -> None:
    with pytest.raises(FaultScriptError, match="file not found"):
        load_fault_script(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("providers: [unclosed\n")
    with pytest.raises(FaultScriptError, match=r"bad.yaml:\d+:\d+: YAML syntax error"):
        load_fault_script(bad)


def test_shipped_chaos_script_loads() -> None:
    script = load_fault_script(DEFAULT_SCRIPT_PATH)
    assert {"openai", "anthropic", "gemini", "azure", "github", "ollama"} <= set(script.providers)


def test_sequence_then_and_health_follow() -> None:
    script = load_fault_script(
        {"providers": {"p": {"sequence": [{"status": 503, "count": 2}, "down"], "then": "ok"}}}
    )
    state = _ProviderState(script.providers["p"], started=0.0, scale=1.0)
    assert state.health_fault(0).status == 503  # health mirrors the current fault...
    kinds = [state.next_chat_fault(0).kind for _ in range(5)]
    assert kinds == ["error", "error", "down", "ok", "ok"]
    assert state.health_fault(0).kind == "ok"


def test_phases_follow_scaled_time_and_repeat() -> None:
    script = load_fault_script(
        {
            "providers": {
                "p": {
                    "phases": [{"for_s": 10, "fault": "ok"}, {"for_s": 5, "fault": 503}],
                    "repeat": True,
                },
                "q": {"phases": [{"for_s": 10, "fault": "down"}], "then": "ok"},
            }
        }
    )
    flapping = _ProviderState(
        script.providers["p"], started=100.0, scale=0.1
    )  # 10 script s = 1 real s
    assert flapping.peek(100.5).kind == "ok"
    assert flapping.peek(101.2).status == 503
    assert flapping.peek(101.6).kind == "ok"  # repeated
    once = _ProviderState(script.providers["q"], started=0.0, scale=1.0)
    assert once.peek(5).kind == "down" and once.peek(11).kind == "ok"


def test_threaded_server_for_sync_code() -> None:
    with FaultServer.running(
        script={"providers": {"openai": {"sequence": [{"status": 429, "retry_after_s": 20}]}}},
        responder=fault_answer,
        time_scale=0.1,
    ) as server:
        with httpx.Client() as client:
            url = server.url("openai") + "/v1/chat/completions"
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            limited = client.post(url, json=body, headers={"x-workbench-task": "verify"})
            assert limited.status_code == 429
            assert limited.headers["retry-after"] == "2"  # 20 s scaled by 0.1
            assert limited.json()["error"]["code"] == "rate_limit_exceeded"
            ok = client.post(url, json=body, headers={"x-workbench-task": "verify"})
            assert (
                ok.json()["choices"][0]["message"]["content"]
                == '{"verdict": "remote:verify", "score": 0.9}'
            )
            assert client.get(server.base_url + "/openai/nothing/here").status_code == 404
        records = server.requests
        assert [r.fault for r in records] == ["error-429", "ok", "unknown-endpoint"]
        assert records[0].headers["x-workbench-task"] == "verify" and records[0].json == body


async def test_retry_after_as_http_date_and_ms(fault_server: FaultServer) -> None:
    fault_server.set_script(
        {
            "providers": {
                "a": {
                    "sequence": [
                        {"status": 429, "retry_after_s": 30, "retry_after_format": "date"},
                        {"status": 429, "retry_after_s": 1.5, "retry_after_format": "ms"},
                        {"status": 429, "retry_after_s": 0.25},
                    ]
                }
            }
        }
    )
    async with httpx.AsyncClient() as client:
        url = fault_server.url("a") + "/v1/chat/completions"
        first = await client.post(url, json={"model": "m", "messages": []})
        assert first.headers["retry-after"].endswith("GMT")
        second = await client.post(url, json={"model": "m", "messages": []})
        assert second.headers["retry-after-ms"] == "1500" and "retry-after" not in second.headers
        third = await client.post(url, json={"model": "m", "messages": []})
        assert (third.headers["retry-after"], third.headers["retry-after-ms"]) == ("1", "250")


async def test_scripted_limits_answer_429_with_headers(fault_server: FaultServer) -> None:
    fault_server.set_script({"providers": {"a": {"limits": {"rpm": 2}}}})
    async with httpx.AsyncClient() as client:
        url = fault_server.url("a") + "/v1/chat/completions"
        statuses = [(await client.post(url, json={"model": "m", "messages": []})) for _ in range(3)]
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert statuses[0].headers["x-ratelimit-remaining-requests"] == "1"
    assert statuses[1].headers["x-ratelimit-remaining-requests"] == "0"
    assert float(statuses[2].headers["retry-after-ms"]) > 0
    assert statuses[2].headers["x-ratelimit-remaining-requests"] == "0"


def test_only_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        FaultServer(host="0.0.0.0")


def test_demo_config_is_a_valid_router_section() -> None:
    from router.config import load_router_config

    config = load_router_config(
        demo_router_config("http://127.0.0.1:1", ["openai", "github", "ollama", "custom"])
    )
    kinds = {p.name: (p.kind, p.resolved_base_url) for p in config.providers}
    assert kinds["github"] == ("github", "http://127.0.0.1:1/github/inference")
    assert kinds["ollama"] == ("ollama_native", "http://127.0.0.1:1/ollama")
    assert kinds["custom"] == ("openai", "http://127.0.0.1:1/custom/v1")
    assert all(p.api_key_env is None for p in config.providers)
    fast = load_router_config(demo_router_config("http://127.0.0.1:1", ["openai"], time_scale=0.1))
    assert fast.policy.cooldown_failure_s == 3.0 and fast.policy.cooldown_rate_limit_s == 12.0
    assert fast.providers[0].timeout_s == 1.0
