"""The run API's client against a real server process: the server's runs read back as the
store's own models, every refusal one line (no token, no such run, no server), and the
command line's refusals before anything is served."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from engine.context import InterruptAnswer
from engine.store import InterruptClosed
from engine.store.postgres import PostgresRunStore
from tests.server.runs import run_workflow, shipped
from tests.server.serving import TOKEN, ServerProcess, server_config, server_env
from tests.tui.terminal import WORKBENCH
from tui.client.http import NotOnServer, ServerClient, ServerError
from tui.client.remote_store import RemoteRunStore
from tui.launch.workspace import Workspace


def test_a_servers_runs_read_as_its_store_reads_them(
    server: ServerProcess, pg_database: str, workspace: Workspace
) -> None:
    done = run_workflow(pg_database, workspace, shipped("fan_out", workspace))
    waiting = run_workflow(pg_database, workspace, shipped("approval", workspace))
    with (
        RemoteRunStore(ServerClient(server.url, environ={"WORKBENCH_TOKEN": TOKEN})) as remote,
        PostgresRunStore(pg_database) as local,
    ):
        assert remote.list_runs_with_inputs() == local.list_runs_with_inputs()
        assert remote.list_runs(1) == local.list_runs(1)
        assert remote.get_run(done) == local.get_run(done)
        assert remote.events(done) == local.events(done)
        assert remote.events(done, after_seq=4) == local.events(done, after_seq=4)
        assert remote.step_results(done) == local.step_results(done)
        assert remote.pending_interrupts(waiting) == local.pending_interrupts(waiting)
        assert remote.get_interrupt("nope") is None
        with pytest.raises(NotOnServer, match="refused: no run 'nope' in the run store"):
            remote.get_run("nope")


def test_an_answer_another_client_gave_first_is_refused_as_a_local_store_refuses_it(
    server: ServerProcess, pg_database: str, workspace: Workspace
) -> None:
    waiting = run_workflow(pg_database, workspace, shipped("approval", workspace))
    with (
        RemoteRunStore(ServerClient(server.url, environ={"WORKBENCH_TOKEN": TOKEN})) as remote,
        PostgresRunStore(pg_database) as local,
    ):
        [pending] = remote.pending_interrupts(waiting)
        local.record_answer(pending.interrupt_id, InterruptAnswer(action="reject"))
        with pytest.raises(InterruptClosed, match="is answered already; each prompt takes one"):
            remote.record_answer(pending.interrupt_id, InterruptAnswer(action="approve"))
        stored = local.get_interrupt(pending.interrupt_id)
        assert stored is not None and stored.answer == InterruptAnswer(action="reject")


def test_refusals_are_one_line(server: ServerProcess, tmp_path: Path) -> None:
    with pytest.raises(ServerError) as no_token:
        RemoteRunStore(ServerClient(server.url, environ={})).list_runs()
    assert str(no_token.value).startswith(f"the server at {server.url} refused: this server")

    with pytest.raises(ServerError) as nobody:
        RemoteRunStore(ServerClient("http://127.0.0.1:1", environ={})).list_runs()
    assert str(nobody.value).startswith("cannot reach the server at http://127.0.0.1:1 (")

    with pytest.raises(ServerError, match="is not a server address"):
        ServerClient("ftp://example.org\x1b[2J")

    env = server_env(tmp_path / "home", tmp_path / "none.yaml")
    app = subprocess.run(
        [WORKBENCH, "--server", "file:///etc/passwd", "app"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert app.returncode != 0 and len(app.stderr.strip().splitlines()) == 1
    assert "'file:///etc/passwd' is not a server address" in app.stderr


def test_the_server_refuses_to_start_without_a_store_or_beyond_loopback_without_a_token(
    tmp_path: Path, pg_database: str
) -> None:
    def start(
        config: Path, *args: str, token: str | None = TOKEN
    ) -> subprocess.CompletedProcess[str]:
        env = server_env(tmp_path / "home", config, token)
        return subprocess.run(
            [WORKBENCH, "server", "--port", "0", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    empty = tmp_path / "empty.yaml"
    empty.write_text("{}\n", encoding="utf-8")
    no_store = start(empty)
    assert no_store.returncode != 0 and len(no_store.stderr.strip().splitlines()) == 1
    assert (
        "workbench server serves a PostgreSQL store, and the config names none" in no_store.stderr
    )

    config = server_config(tmp_path / "config", pg_database)
    wide = start(config, "--host", "0.0.0.0", token=None)
    assert wide.returncode != 0 and len(wide.stderr.strip().splitlines()) == 1
    assert "needs $WORKBENCH_TOKEN" in wide.stderr
    short = start(config, token="short")
    assert "$WORKBENCH_TOKEN is 5 characters" in short.stderr


def test_runs_list_show_and_export_read_the_server_as_the_store(
    server: ServerProcess, pg_database: str, workspace: Workspace, tmp_path: Path
) -> None:
    done = run_workflow(pg_database, workspace, shipped("fan_out", workspace))
    run_workflow(pg_database, workspace, shipped("approval", workspace))
    here = server_env(tmp_path / "client-home", tmp_path / "none.yaml")
    direct = server_env(tmp_path / "direct-home", server.config)  # the same database, no server

    def workbench(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [WORKBENCH, *args], env=env, capture_output=True, text=True, timeout=120
        )

    for command in (
        ["runs", "list", "--json"],
        ["runs", "show", done, "--json"],
        ["runs", "export", done],
    ):
        remote = workbench(here, "--server", server.url, *command)
        local = workbench(direct, *command)
        assert remote.returncode == 0, remote.stderr
        assert (remote.stdout, remote.returncode) == (local.stdout, local.returncode), command

    unknown = workbench(here, "--server", server.url, "runs", "show", "nope")
    assert unknown.returncode != 0 and len(unknown.stderr.strip().splitlines()) == 1
    assert "refused: no run 'nope' in the run store; see workbench runs list" in unknown.stderr

    refused = workbench(here, "--server", server.url, "runs", "copy", "--to", str(tmp_path))
    assert refused.returncode != 0 and len(refused.stderr.strip().splitlines()) == 1
    assert "`workbench runs copy` works on this machine's store only" in refused.stderr
