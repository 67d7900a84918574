"""Opening a PostgreSQL database for the workbench's stores.

The address (a libpq connection string or ``postgresql://`` URI) may carry a password: it is
kept in :class:`Database` and never shown — every message names the database by
:attr:`Database.display`, which has none, and drops the password from server text too. The
password can stay out of the address altogether: libpq reads ``PGPASSWORD`` (or
``~/.pgpass``) itself.

Connections are made with ``prepare_threshold=None`` (no server-side prepared statements, so
a pooled connection to a restarted server or through a transaction pooler is never asked for
a statement it does not have), checked before a pool hands them out, and every pool's sessions
end a transaction left idle for :data:`IDLE_IN_TRANSACTION_S` seconds (:func:`configure_session`,
:func:`configure_session_async`: the run store's and the router's pools, LangGraph's
checkpointer, the worker queue). The stores keep no transaction open across an ``await``, so an
idle one belongs to a frozen process, whose locks would otherwise hold up everybody else: a
worker stopped inside a checkpoint write once held its run's lease row until the test waiting
for the takeover gave up. A session that already ends idle transactions — the server's, the
role's or the database's setting, the address's ``options``, ``PGOPTIONS`` — keeps its own
timeout. The setting is made after connecting rather than in the startup packet, which a
transaction pooler such as PgBouncer refuses for settings it does not track.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if (
    TYPE_CHECKING
):  # psycopg is imported when a database is used: deciding that one is named needs none
    import psycopg
    from psycopg_pool import ConnectionPool

SCHEMES = ("postgresql://", "postgres://")
IDLE_IN_TRANSACTION_S = 30
CONNECTION_KWARGS: dict[str, Any] = {"prepare_threshold": None}
"""Keyword arguments of every connection the stores open (psycopg's ``connect``)."""


def is_database_address(text: str) -> bool:
    """Whether a configured store names a PostgreSQL database rather than a folder."""
    return text.strip().lower().startswith(SCHEMES)


class DatabaseError(Exception):
    """A PostgreSQL store that cannot be reached or used; ``str()`` is one line naming the
    database (without its password) and what to do."""


class Database:
    """A PostgreSQL address; ``display`` and ``repr`` never show its password."""

    def __init__(self, conninfo: str) -> None:
        from psycopg import ProgrammingError
        from psycopg.conninfo import conninfo_to_dict

        try:
            params = conninfo_to_dict(conninfo)
        except ProgrammingError:  # libpq's reason may quote the address: not shown
            raise DatabaseError(
                "not a PostgreSQL address libpq can read — write it as "
                "postgresql://USER@HOST:PORT/DATABASE, the password in PGPASSWORD"
            ) from None
        self._conninfo = conninfo
        self._password = str(params.get("password") or "")
        self.display = _display(params)

    @property
    def has_password(self) -> bool:
        return bool(self._password)

    @property
    def conninfo(self) -> str:
        """The address as given, password included: for libpq only, never for a person."""
        return self._conninfo

    def redact(self, text: str) -> str:
        """``text`` with the password, and any ``password=``/URI secret, taken out."""
        if self._password:
            text = text.replace(self._password, "***")
        text = re.sub(r"(password\s*=\s*)\S+", r"\1***", text, flags=re.IGNORECASE)
        return re.sub(r"(postgres(?:ql)?://[^:/@\s]*:)[^@\s]*@", r"\1***@", text)

    def error(self, what: str, error: BaseException) -> DatabaseError:
        """The one-line :class:`DatabaseError` for ``error`` met while using ``what``."""
        reason = self.redact(_first_line(str(error)) or type(error).__name__)
        return DatabaseError(
            f"{self.display}: cannot use the {what} ({reason}) — {_remedy(reason)}"
        )

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        """One connection, made as the pools make theirs."""
        from psycopg import connect

        return connect(self._conninfo, **(CONNECTION_KWARGS | kwargs))

    def __repr__(self) -> str:
        return f"Database({self.display!r})"


def open_pool(
    database: Database, what: str, *, max_size: int = 4, timeout_s: float = 10.0
) -> ConnectionPool[Any]:
    """A connection pool on ``database``, opened only once a first connection succeeded, so a
    wrong address or a stopped server is one clear line rather than a pool timeout."""
    from psycopg import Error
    from psycopg_pool import ConnectionPool

    try:
        database.connect(connect_timeout=max(1, int(timeout_s))).close()
    except Error as error:
        raise database.error(what, error) from None
    pool: ConnectionPool[Any] = ConnectionPool(
        database.conninfo,
        min_size=1,
        max_size=max_size,
        kwargs=CONNECTION_KWARGS,
        configure=configure_session,
        check=ConnectionPool.check_connection,
        timeout=timeout_s,
        name=what,
        open=False,
    )
    pool.open(wait=True, timeout=timeout_s)
    return pool


def _ending_idle_transactions() -> str:
    """The statement that gives a session :data:`IDLE_IN_TRANSACTION_S` unless it already ends
    idle transactions (its timeout is not 0)."""
    return (
        "SELECT set_config('idle_in_transaction_session_timeout', "
        f"'{int(IDLE_IN_TRANSACTION_S * 1000)}ms', false) "
        "WHERE current_setting('idle_in_transaction_session_timeout') = '0'"
    )


def configure_session(conn: psycopg.Connection[Any]) -> None:
    """A pool's ``configure``: the session ends a transaction left idle (the module's docstring)."""
    conn.execute(_ending_idle_transactions())
    conn.commit()


async def configure_session_async(conn: psycopg.AsyncConnection[Any]) -> None:
    """:func:`configure_session` for an asynchronous pool."""
    await conn.execute(_ending_idle_transactions())
    await conn.commit()


def _display(params: dict[str, Any]) -> str:
    user = params.get("user") or ""
    host = str(params.get("host") or "")
    port = params.get("port") or ""
    name = params.get("dbname") or user or ""
    where = f"{user}@" if user else ""
    if host.startswith("/"):
        return f"postgresql://{where}/{name}?host={host}"
    return f"postgresql://{where}{host}{':' + str(port) if port else ''}/{name}"


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _remedy(reason: str) -> str:
    text = reason.lower()
    if "password" in text or "authentication" in text:
        return "set the password in PGPASSWORD (or ~/.pgpass) for this user"
    if "does not exist" in text and "database" in text:
        return "create the database (createdb NAME), then run workbench db upgrade"
    if "workbench db upgrade" in text:
        return "run workbench db upgrade with this store"
    if "refused" in text or "no such file" in text or "could not connect" in text:
        return "start the PostgreSQL server, or correct the store address in the config"
    return "check the store address in the config and that the server runs"
