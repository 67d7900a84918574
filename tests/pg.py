"""A real PostgreSQL server for the tests: ``initdb`` and ``pg_ctl`` into a temporary folder.

One server per test session (per xdist worker): a Unix socket in its own folder and no TCP
(``listen_addresses=''``), ``fsync=off`` (nothing here must survive a power cut), trust
authentication for the local socket. initdb refuses to run as root — as the suite runs here
and in CI — so as root the server is run as the ``postgres`` user in a folder that user owns.
Each test gets a fresh database copied from a template that holds the migrated schema
(``CREATE DATABASE … TEMPLATE``: a file copy, no migration per test).

Where PostgreSQL is not installed the PostgreSQL tests skip saying so — except in CI (``CI``
set), where they fail: ``.ci/run`` installs it, and a suite that silently skipped the second
back-end would prove nothing about it.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest

TEMPLATE = "workbench_template"
SERVER_VERSIONS = ("17", "16", "15")
"""Debian's server packages, newest first (``/usr/lib/postgresql/N/bin``)."""


def server_bin() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres`` (``WORKBENCH_PG_BIN`` first)."""
    candidates = [os.environ.get("WORKBENCH_PG_BIN", "")]
    candidates += [f"/usr/lib/postgresql/{v}/bin" for v in SERVER_VERSIONS]
    for folder in filter(None, candidates):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


class PostgresServer:
    """A running throwaway server; :meth:`database` makes a fresh database from the template."""

    def __init__(self, root: Path, socket_dir: Path, as_postgres: bool) -> None:
        self.root = root
        self.socket_dir = socket_dir
        self._as_postgres = as_postgres
        self._names = itertools.count()
        self._created: list[str] = []

    def conninfo(self, dbname: str) -> str:
        """The address of database ``dbname``, as the config's ``store:`` writes one."""
        return f"postgresql://postgres@/{dbname}?host={self.socket_dir}"

    def database(self) -> str:
        """The address of a new database holding the migrated schema."""
        return self._create(f"test_{next(self._names)}", f"TEMPLATE {TEMPLATE}")

    def empty_database(self) -> str:
        """The address of a new database with no schema at all."""
        return self._create(f"empty_{next(self._names)}", "")

    def _create(self, name: str, options: str) -> str:
        with psycopg.connect(self.conninfo("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" {options}')
        self._created.append(name)
        return self.conninfo(name)

    def drop_databases(self) -> None:
        """Drop the databases made so far, and the connections a test left open to them."""
        with psycopg.connect(self.conninfo("postgres"), autocommit=True) as conn:
            while self._created:
                conn.execute(f'DROP DATABASE "{self._created.pop()}" WITH (FORCE)')


def _run(command: list[str], as_postgres: bool) -> None:
    if as_postgres:
        command = ["runuser", "-u", "postgres", "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip() or done.stdout}")


@contextmanager
def postgres_server(migrate: Callable[[str], object]) -> Iterator[PostgresServer]:
    """Start a server, build the template database with ``migrate(address)``, stop it after."""
    binaries = server_bin()
    if binaries is None:
        message = (
            "PostgreSQL's server is not installed (no initdb under /usr/lib/postgresql/N/bin):"
            " apt-get install postgresql, or set WORKBENCH_PG_BIN"
        )
        if os.environ.get("CI"):
            pytest.fail(f"{message} — CI must run the PostgreSQL tests", pytrace=False)
        pytest.skip(message)
    as_postgres = os.geteuid() == 0
    root = Path(tempfile.mkdtemp(prefix="wb-pg-"))
    socket_dir = root / "s"
    socket_dir.mkdir()
    if as_postgres:
        shutil.chown(root, "postgres", "postgres")
        shutil.chown(socket_dir, "postgres", "postgres")
    data = root / "data"
    _run(
        [
            str(binaries / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ],
        as_postgres,
    )
    options = (
        f"-c listen_addresses='' -c unix_socket_directories={socket_dir} -c fsync=off"
        " -c synchronous_commit=off -c full_page_writes=off -c max_connections=100"
    )
    _run(
        [
            str(binaries / "pg_ctl"),
            "-D",
            str(data),
            "-l",
            str(root / "log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        ],
        as_postgres,
    )
    server = PostgresServer(root, socket_dir, as_postgres)
    try:
        with psycopg.connect(server.conninfo("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {TEMPLATE}")
        migrate(server.conninfo(TEMPLATE))
        yield server
    finally:
        _run([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], as_postgres)
        shutil.rmtree(root, ignore_errors=True)
