"""`workbench providers`, `workbench providers check` and `workbench fault-server`."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml
from click.testing import CliRunner

from plumbing.workspace import PROVIDER_STATS_FILE as STATS_FILENAME
from router.build import build_router
from router.errors import RouterError
from router.fault.server import FaultServer
from router.local import TaskHandlerRegistry
from tui.commands.router_cmds import COMMANDS, fault_server_cmd, providers_group

from .conftest import fault_answer, make_config, provider_entry, request

ENV_VARS = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "GITHUB_TOKEN",
    "OLLAMA_HOST",
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


def obj(tmp_path: Path, config: dict | None = None) -> dict:
    path = tmp_path / "config.yaml"
    if config is not None:
        path.write_text(yaml.safe_dump({"router": config}))
    return {"workspace": str(tmp_path), "config_path": str(path)}


def test_commands_are_exported() -> None:
    assert [c.name for c in COMMANDS] == ["providers", "fault-server"]


def test_providers_with_nothing_configured(tmp_path: Path, clean_env: None) -> None:
    result = CliRunner().invoke(providers_group, [], obj=obj(tmp_path))
    assert result.exit_code == 0, result.output
    assert "builtin" in result.output and "CLOSED" in result.output
    assert not (tmp_path / STATS_FILENAME).exists()  # showing never creates the stats file


def test_a_bad_config_is_one_clear_line(tmp_path: Path, clean_env: None) -> None:
    bad = {"providers": [{"name": "x", "kind": "opena", "model": "m"}]}
    result = CliRunner().invoke(providers_group, [], obj=obj(tmp_path, bad))
    assert result.exit_code == 2
    assert result.output.strip().startswith("error: ")
    assert "config.yaml:3: router.providers[0].kind: Input should be 'openai'" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1


def test_providers_shows_state_persisted_by_another_process(
    tmp_path: Path, clean_env: None
) -> None:
    script = {"providers": {"openai": {"sequence": [{"status": 429, "retry_after_s": 300}]}}}
    with FaultServer.running(script=script, responder=fault_answer) as server:
        section = {"providers": [provider_entry(server, "openai", api_key_env=None, bulkhead=7)]}

        async def run_app() -> None:  # stands for the application, in its own process
            router = build_router(
                make_config(section["providers"]),
                stats_path=tmp_path,
                task_handlers=TaskHandlerRegistry(),
            )
            with pytest.raises(RouterError):
                await router.complete(request())
            await router.aclose()

        asyncio.run(run_app())

    result = CliRunner().invoke(providers_group, ["--json"], obj=obj(tmp_path, section))
    assert result.exit_code == 0, result.output
    snaps = {s["name"]: s for s in json.loads(result.output)}
    assert snaps["openai"]["state"] == "OPEN"
    assert 200 < snaps["openai"]["cooldown_remaining_s"] <= 300
    assert snaps["openai"]["last_error"] == "rate_limit" and snaps["openai"]["bulkhead_size"] == 7
    table = CliRunner().invoke(providers_group, [], obj=obj(tmp_path, section))
    assert "OPEN" in table.output and "0/7" in table.output and "rate_limit" in table.output


def test_providers_check_probes_health_endpoints(tmp_path: Path, clean_env: None) -> None:
    script = {"providers": {"bad": {"health": {"status": 401}}}}
    with FaultServer.running(script=script, responder=fault_answer) as server:
        section = {
            "providers": [
                {
                    "name": "good",
                    "kind": "ollama_native",
                    "base_url": server.url("good"),
                    "model": "m",
                },
                {
                    "name": "bad",
                    "kind": "anthropic",
                    "base_url": server.url("bad"),
                    "model": "m",
                    "api_key_env": None,
                },
            ]
        }
        result = CliRunner().invoke(providers_group, ["check"], obj=obj(tmp_path, section))
        paths = [(r.provider, r.api_path) for r in server.requests]
    assert result.exit_code == 1
    assert "good" in result.output and "ok" in result.output
    assert "FAIL" in result.output and "misconfigured" in result.output
    assert sorted(paths) == [("bad", "/v1/models"), ("good", "/api/tags")]


def test_providers_check_with_nothing_configured(tmp_path: Path, clean_env: None) -> None:
    result = CliRunner().invoke(providers_group, ["check"], obj=obj(tmp_path))
    assert result.exit_code == 0 and "built-in provider serves alone" in result.output


def test_fault_server_rejects_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "chaos.yaml"
    script.write_text("providers:\n  openai: {fault: explode}\n")
    result = CliRunner().invoke(fault_server_cmd, ["--script", str(script)])
    assert result.exit_code == 2  # bad input, as every command's
    assert result.output.startswith("error: ")
    assert "chaos.yaml: providers.openai.fault: unknown fault 'explode'" in result.output
    assert "Traceback" not in result.output


def test_fault_server_command_serves_until_interrupted(tmp_path: Path) -> None:
    script = tmp_path / "chaos.yaml"
    script.write_text("providers:\n  openai: {sequence: [{status: 503}]}\n")
    code = "import sys; from tui.commands.router_cmds import fault_server_cmd; fault_server_cmd(sys.argv[1:])"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "--port", "0", "--script", str(script), "--time-scale", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert (
            first.startswith("fault server listening on http://127.0.0.1:")
            and "time scale 0.5" in first
        )
        base = first.split()[4]
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert httpx.post(f"{base}/openai/v1/chat/completions", json=body).status_code == 503
        assert httpx.post(f"{base}/openai/v1/chat/completions", json=body).status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
    assert process.stdout is not None and process.stderr is not None
    out, err = process.stdout.read(), process.stderr.read()
    assert "router config for these providers" in out
    assert "POST /v1/chat/completions" in out and "error-503" in out
    assert "fault server stopped" in err and "Traceback" not in err
