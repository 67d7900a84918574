"""`workbench db upgrade`, `workbench runs copy` and runs driven on a PostgreSQL store — the real
`workbench` process against a real PostgreSQL server."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from engine.states import RunStatus
from engine.store.postgres import PostgresRunStore
from tests.cli.test_engine_cli import workbench
from tests.pg import PostgresServer
from workflows import WORKFLOWS_DIR


def _config(tmp_path: Path, address: str | None) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(f"store: {address}\n" if address else "theme: textual-dark\n")
    return path


def _with(config: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return workbench(workspace, "--config", str(config), *args)


def test_db_upgrade_creates_the_schema_once_and_says_where(
    pg_empty_database: str, tmp_path: Path
) -> None:
    address = pg_empty_database
    shown = address  # a test address has no password to hide
    config = _config(tmp_path, address)
    first = _with(config, tmp_path / "ws", "db", "upgrade")
    assert (first.returncode, first.stderr) == (0, "")
    assert first.stdout == (
        f"{shown}: schema upgraded (queue_0001, router_0001, router_0002, runs_0001, runs_0002); LangGraph checkpoints ready\n"
    )
    again = _with(config, tmp_path / "ws", "db", "upgrade")
    assert (again.returncode, again.stdout) == (0, f"{shown}: schema up to date\n")
    PostgresRunStore(address).close()  # the store opens on the schema it made


def test_db_upgrade_without_a_store_or_with_a_password_in_the_config_is_one_line(
    pg_server: PostgresServer, tmp_path: Path
) -> None:
    config = _config(tmp_path, None)
    missing = _with(config, tmp_path / "ws", "db", "upgrade")
    assert missing.returncode == 2
    assert missing.stderr == (
        "error: no PostgreSQL store to upgrade: set store: postgresql://USER@HOST/DATABASE in "
        f"{config}, or pass --store\n"
    )
    secret = pg_server.conninfo("postgres").replace("postgres@", "postgres:s3cret@")
    config.write_text(f"theme: textual-dark\nstore: {secret}\n")
    refused = _with(config, tmp_path / "ws", "runs", "list")
    assert refused.returncode == 2 and "s3cret" not in refused.stderr + refused.stdout
    assert refused.stderr == (
        f"error: {config}:2: store: holds a password, and secrets never go in the config file;"
        " take it out and export it in PGPASSWORD (or write it in ~/.pgpass)\n"
    )
    behind = _with(config, tmp_path / "ws", "db", "upgrade", "--store", "nowhere")
    assert behind.returncode == 2 and "Traceback" not in behind.stderr


def test_a_run_on_the_postgres_store_waits_and_is_resumed_by_another_process(
    pg_database: str, tmp_path: Path
) -> None:
    config = _config(tmp_path, pg_database)
    waiting = _with(
        config,
        tmp_path / "ws",
        "run",
        str(WORKFLOWS_DIR / "approval.yaml"),
        "--headless",
        "--on-interrupt",
        "wait",
    )
    assert waiting.returncode == 4, waiting.stderr
    assert not (tmp_path / "ws" / "runs.sqlite").exists()  # the runs are in the database
    with PostgresRunStore(pg_database) as store:
        (run,) = store.list_runs()
    assert run.status == RunStatus.WAITING
    done = _with(config, tmp_path / "ws", "resume", run.run_id, "--answer", "approve")
    assert done.returncode == 0, done.stderr
    listed = _with(config, tmp_path / "ws", "runs", "list")
    assert run.run_id in listed.stdout and "COMPLETED" in listed.stdout


def test_runs_copy_moves_a_workspace_to_the_server_and_back(
    pg_database: str, tmp_path: Path
) -> None:
    local, elsewhere = tmp_path / "local", tmp_path / "elsewhere"
    plain = _config(tmp_path, None)
    ran = _with(plain, local, "run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless")
    assert ran.returncode == 0, ran.stderr
    exported = _with(plain, local, "runs", "list", "--json")
    run_id = re.findall(r'"run_id": "([^"]+)"', exported.stdout)[0]

    up = _with(plain, local, "runs", "copy", "--to", pg_database)
    assert up.returncode == 0, up.stderr
    lines = up.stdout.splitlines()
    assert re.fullmatch(rf"copied  {run_id} \(\d+ events\)", lines[0])
    assert lines[1] == (
        f"1 copied, 0 already there, 0 differing — from {local / 'runs.sqlite'} to {pg_database}"
    )
    again = _with(plain, local, "runs", "copy", "--to", pg_database)
    assert again.stdout.splitlines() == [
        f"present {run_id} (already there, unchanged)",
        f"0 copied, 1 already there, 0 differing — from {local / 'runs.sqlite'} to {pg_database}",
    ]

    (tmp_path / "server").mkdir()
    server = _config(tmp_path / "server", pg_database)
    down = _with(server, local, "runs", "copy", "--to", str(elsewhere))
    assert down.returncode == 0, down.stderr
    assert down.stdout.splitlines()[-1] == (
        f"1 copied, 0 already there, 0 differing — from {pg_database} to"
        f" {elsewhere / 'runs.sqlite'}"
    )
    original = _with(plain, local, "runs", "export", run_id).stdout
    assert _with(plain, elsewhere, "runs", "export", run_id).stdout == original
    assert _with(server, local, "runs", "export", run_id).stdout == original

    same = _with(server, local, "runs", "copy", "--to", pg_database)
    assert (same.returncode, same.stderr) == (
        2,
        f"error: --to names the store the runs are copied from ({pg_database})\n",
    )
    nothing = _with(
        plain, local, "runs", "copy", "--from", str(tmp_path / "void"), "--to", str(elsewhere)
    )
    assert (nothing.returncode, nothing.stderr) == (
        2,
        f"error: --from: no run store at {tmp_path / 'void' / 'runs.sqlite'}\n",
    )


def test_the_sqlite_default_loads_no_postgresql_client(tmp_path: Path) -> None:
    from tests.cli.test_lazy_commands import modules_loaded_by

    loaded = modules_loaded_by("--workspace", str(tmp_path), "runs", "list")
    assert not {m for m in loaded if m.split(".")[0] in ("psycopg", "psycopg_pool", "alembic")}
    assert "engine.store.postgres" not in loaded
