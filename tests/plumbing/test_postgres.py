"""Opening PostgreSQL and migrating its schema, on a real server: the password is never shown,
a database that cannot be used is one line saying what to do, ``upgrade`` is idempotent and
safe to run twice at once, and a store refuses a schema behind or ahead of its code."""

from __future__ import annotations

import threading

import psycopg
import pytest

from engine.store.migrations import CHAIN as RUNS
from engine.store.postgres import SCHEMA_REVISION, PostgresRunStore
from plumbing.migrations import current_revisions, upgrade
from plumbing.postgres import Database, DatabaseError, is_database_address, open_pool
from router.stats_migrations import CHAIN as ROUTER
from router.stats_postgres import PostgresStatsStore
from tests.pg import PostgresServer


@pytest.mark.parametrize(
    "address, shown",
    [
        ("postgresql://ada:s3cret@db.example:5433/runs", "postgresql://ada@db.example:5433/runs"),
        (
            "host=/run/pg dbname=runs user=ada password=s3cret",
            "postgresql://ada@/runs?host=/run/pg",
        ),
        ("postgres://db.example/runs", "postgresql://db.example/runs"),
    ],
)
def test_an_address_is_shown_without_its_password(address: str, shown: str) -> None:
    database = Database(address)
    assert is_database_address(address) == address.startswith("postgres")
    assert database.display == shown
    assert "s3cret" not in repr(database)
    assert "s3cret" not in database.redact(f"failed for {address} (password=s3cret)")
    if "s3cret" in address:  # the password itself, wherever a server's text repeats it
        assert database.redact("user ada, s3cret") == "user ada, ***"


def test_an_address_that_is_not_one_is_a_clear_line() -> None:
    with pytest.raises(DatabaseError) as refused:
        Database("host=/tmp password=s3cret dbname='unterminated")
    assert str(refused.value).startswith("not a PostgreSQL address libpq can read — write it as")
    assert "s3cret" not in str(refused.value)


def test_a_database_that_does_not_exist_is_one_line_without_the_password(
    pg_server: PostgresServer,
) -> None:
    address = pg_server.conninfo("nowhere") + "&password=s3cret"
    with pytest.raises(DatabaseError) as failed:
        open_pool(Database(address), "run store")
    message = str(failed.value)
    assert "\n" not in message and "s3cret" not in message
    assert message.startswith(f"postgresql://postgres@/nowhere?host={pg_server.socket_dir}:")
    assert 'database "nowhere" does not exist' in message
    assert message.endswith("create the database (createdb NAME), then run workbench db upgrade")


def test_upgrade_creates_every_chain_once_and_two_at_once_take_turns(
    pg_empty_database: str,
) -> None:
    database = Database(pg_empty_database)
    with pytest.raises(DatabaseError, match=r"schema is not ready \(at none, needs runs_0002\)"):
        PostgresRunStore(database)
    applied: list[list[str]] = []
    threads = [
        threading.Thread(target=lambda: applied.append(upgrade(database, [RUNS, ROUTER])))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(applied) == [[], ["router_0001", "router_0002", "runs_0001", "runs_0002"]]
    assert upgrade(database, [RUNS, ROUTER]) == []
    with database.connect() as conn:
        assert current_revisions(conn) == {"runs_0002", "router_0002"}
    PostgresRunStore(database).close()
    PostgresStatsStore(database).close()


def test_a_schema_written_by_a_newer_workbench_is_refused(pg_database: str) -> None:
    with psycopg.connect(pg_database) as conn:
        conn.execute("UPDATE alembic_version SET version_num = 'runs_0099' WHERE version_num = %s",
                     (SCHEMA_REVISION,))  # fmt: skip
    with pytest.raises(DatabaseError) as refused:
        PostgresRunStore(pg_database)
    assert "written by a newer Research Workbench (schema runs_0099" in str(refused.value)
    assert str(refused.value).endswith("upgrade the workbench")
    PostgresStatsStore(pg_database).close()  # the other chain is untouched


def _kill_other_connections(address: str) -> int:
    with psycopg.connect(address, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    return int(row[0]) if row else 0


def test_stores_replace_pooled_connections_the_server_dropped(pg_database: str) -> None:
    """The pitfall of pooled connections to a server that dropped them (a restart, an idle
    timeout): each connection is checked before a pool hands it out, so the next read and
    write succeed on a new one."""
    from engine.events import Log
    from engine.spec import StepSpec, WorkflowDefinition
    from router.stats import CallRecord

    wf = WorkflowDefinition(name="dropped", steps=[StepSpec(id="a", uses="demo.echo")])
    with PostgresRunStore(pg_database) as store:
        stats = PostgresStatsStore(pg_database)
        run_id = store.create_run(wf, {}, "kahn", "test")
        store.append(Log(run_id=run_id, message="before"))
        stats.write([CallRecord("p", True, 0.1, None, 1, 1, 1.0)], [])
        assert _kill_other_connections(pg_database) >= 2
        store.append(Log(run_id=run_id, message="after"))
        assert [e.seq for e in store.events(run_id)] == [1, 2]
        stats.write([CallRecord("p", True, 0.1, None, 1, 1, 2.0)], [])
        assert stats.load()["p"].totals.requests == 2
        stats.close()
