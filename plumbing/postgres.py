"""Opening a PostgreSQL database for the workbench's stores.

The address (a libpq connection string or ``postgresql://`` URI) may carry a password: it is
kept in :class:`Database` and never shown — every message names the database by
:attr:`Database.display`, which has none, and drops the password from server text too. The
password can stay out of the address altogether: libpq reads ``PGPASSWORD`` (or
``~/.pgpass``) itself.

Connections are made with ``prepare_threshold=None`` (no server-side prepared statements, so
a pooled connection to a restarted server or through a transaction pooler is never asked for
a statement it does not have), checked before a pool hands them out, and their sessions end
a transaction left idle for :data:`IDLE_IN_TRANSACTION_S` seconds: the stores keep no
transaction open across an ``await``, so an idle one belongs to a frozen process, whose locks
would otherwise hold up everybody else. That setting travels in the connection's startup
``options`` (:attr:`Database.connection_kwargs`), so every connection has it from its first
statement — the run store's, LangGraph's checkpointer's, the worker queue's, the event feed's —
and none depends on a pool remembering to set it.
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
SESSION_OPTIONS = f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_S}s"
"""Server settings every session starts with (libpq's ``options``); an address's own
``options`` come after them, so a setting the address names wins."""


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
        self._options = " ".join(filter(None, (SESSION_OPTIONS, str(params.get("options") or ""))))
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

    @property
    def connection_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of every connection the stores open (psycopg's ``connect``, a
        pool's ``kwargs``)."""
        return {"prepare_threshold": None, "options": self._options}

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        """One connection, made as the pools make theirs."""
        from psycopg import connect

        return connect(self._conninfo, **(self.connection_kwargs | kwargs))

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
        kwargs=database.connection_kwargs,
        check=ConnectionPool.check_connection,
        timeout=timeout_s,
        name=what,
        open=False,
    )
    pool.open(wait=True, timeout=timeout_s)
    return pool


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
