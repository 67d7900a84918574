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


def _idle_timeout_of_every_pool(address: str) -> set[str]:
    """``idle_in_transaction_session_timeout`` as a connection of each kind of pool the
    workbench opens on ``address`` sees it: a store's, LangGraph's checkpointer's, the worker
    queue's."""
    import asyncio

    from engine.langgraph_checkpoint import open_postgres_checkpointer
    from tui.worker.job_manager import worker_app

    database = Database(address)
    show = "SHOW idle_in_transaction_session_timeout"
    seen: set[str] = set()
    pool = open_pool(database, "run store")
    with pool.connection() as conn:
        seen.add(str(conn.execute(show).fetchone()[0]))  # type: ignore[index]
    pool.close()

    async def asynchronous() -> None:
        async with open_postgres_checkpointer(database, lambda _run: None) as saver:
            async with saver.conn.connection() as conn:  # type: ignore[union-attr]
                row = await (await conn.execute(show)).fetchone()
                seen.add(str(row["idle_in_transaction_session_timeout"]))
        app = worker_app(database, pool_size=1)
        async with app.open_async():
            row = await app.connector.execute_query_one_async(show)
            seen.add(str(row["idle_in_transaction_session_timeout"]))

    asyncio.run(asynchronous())
    return seen


def test_every_pool_ends_a_transaction_left_idle(pg_database: str) -> None:
    """A process frozen inside a transaction (SIGSTOP, a debugger) holds its locks until its
    session ends: every pool's sessions end one left idle, and a session that already has a
    timeout of its own (here the address's ``options``) keeps it."""
    assert _idle_timeout_of_every_pool(pg_database) == {"30s"}
    own = pg_database + "&options=-c%20idle_in_transaction_session_timeout%3D7s"
    assert _idle_timeout_of_every_pool(own) == {"7s"}


def test_a_checkpoint_write_left_idle_is_ended_and_its_lease_lock_freed(
    pg_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frozen worker of the takeover test, by hand: a transaction of LangGraph's
    checkpointer pool holding the run's lease row (``FOR SHARE``, as a fenced checkpoint write
    does) and left idle is ended by the server, and a takeover's claim waiting on the row goes
    on. (The checkpointer's pool once never set the timeout: the claim waited for ever.)"""
    import asyncio

    import plumbing.postgres
    from engine.langgraph_checkpoint import open_postgres_checkpointer
    from engine.spec import StepSpec, WorkflowDefinition
    from engine.store.postgres import LEASE_EPOCH_SQL

    monkeypatch.setattr(plumbing.postgres, "IDLE_IN_TRANSACTION_S", 1)
    with PostgresRunStore(pg_database) as store:
        wf = WorkflowDefinition(name="idle", steps=[StepSpec(id="a", uses="demo.echo")])
        run_id = store.create_run(wf, {}, "kahn", "test")
        store.claim(run_id)

    async def frozen_holder() -> type[BaseException] | None:
        async with open_postgres_checkpointer(Database(pg_database), lambda _run: None) as saver:
            async with saver.conn.connection() as conn:  # type: ignore[union-attr]
                await conn.set_autocommit(False)
                await conn.execute(LEASE_EPOCH_SQL, (run_id,))  # then nothing: frozen
                await asyncio.to_thread(take_over)
                try:
                    await conn.execute("SELECT 1")
                except psycopg.Error as error:
                    return type(error)
                return None

    def take_over() -> None:
        with psycopg.connect(pg_database, autocommit=True) as taker:
            taker.execute("SET lock_timeout = '60s'")  # far past the idle timeout
            taker.execute("UPDATE run_leases SET epoch = epoch + 1 WHERE run_id = %s", (run_id,))

    assert asyncio.run(frozen_holder()) is psycopg.errors.IdleInTransactionSessionTimeout
