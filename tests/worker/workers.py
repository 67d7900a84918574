"""Worker processes for the tests: real ``workbench worker`` subprocesses on a test database,
and waiting for what they do by reading the database (never by sleeping a fixed time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from engine.spec import WorkflowDefinition
from tests.engine.kahn_helpers import step, workflow
from tests.worker.steps import CALLS_ENV

ROOT = Path(__file__).resolve().parents[2]
TIGHT = ("--heartbeat", "0.5", "--stalled-after", "2", "--poll", "0.5")
"""Takeover in about two seconds: the kill and freeze tests."""
PATIENT = ("--heartbeat", "0.5", "--stalled-after", "30", "--poll", "0.5")
"""No takeover unless a worker is gone for half a minute."""
DEADLINE_S = 180.0
"""How long a test waits for an effect before it fails (generous: CI shares two cores)."""
T = TypeVar("T")


class WorkerProcess:
    """One ``workbench worker`` process; its output goes to a log file."""

    def __init__(self, address: str, folder: Path, name: str, *options: str) -> None:
        self.name = name
        self.log_path = folder / f"{name}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tui.cli",
                "--workspace",
                str(folder / "workspace"),
                "worker",
                "--store",
                address,
                "--name",
                name,
                "--import",
                "tests.worker.steps",
                *options,
            ],
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, CALLS_ENV: str(folder / "calls.txt")},
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def stop(self) -> int:
        """SIGCONT (a frozen one), SIGTERM, then its exit status (SIGKILL if it hangs)."""
        if self.process.poll() is None:
            self.signal(signal.SIGCONT)
            self.signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode


@contextmanager
def workers(address: str, folder: Path, count: int, *options: str) -> Iterator[list[WorkerProcess]]:
    """``count`` workers (more may be added to the list), all stopped after the block; when
    the block fails, each worker's log is printed (pytest shows it beside the failure)."""
    started = [WorkerProcess(address, folder, f"w{i}", *options) for i in range(count)]
    try:
        yield started
    except BaseException:
        for worker in started:
            worker.stop()
            print(f"--- {worker.name}'s log ---\n{worker.log()}")
        raise
    finally:
        for worker in started:
            worker.stop()


def wait_for(what: str, probe: Callable[[], T | None], deadline_s: float = DEADLINE_S) -> T:
    """Poll ``probe`` until it returns a true value (not None, False, 0 or an empty
    collection); that value. Fail naming ``what`` after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"waited {deadline_s:g} s for {what}")
        time.sleep(0.05)


def query(address: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(address, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def run_status(address: str, run_id: str) -> str:
    return str(query(address, "SELECT status FROM runs WHERE run_id = %s", run_id)[0][0])


def holder_pid(address: str, run_id: str) -> int | None:
    """The process whose handle holds the run's lease (``pid N on HOST``)."""
    rows = query(address, "SELECT holder FROM run_leases WHERE run_id = %s", run_id)
    return int(str(rows[0][0]).split()[1]) if rows else None


def calls(folder: Path) -> list[tuple[str, str, int, int]]:
    """The journaled calls really made: (run, step, iteration, pid)."""
    path = folder / "calls.txt"
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [(run, step, int(it), int(pid)) for run, step, it, pid in rows]


def chain(name: str, count: int, seconds: float) -> WorkflowDefinition:
    """``count`` I/O-bound steps one after another: each one journaled call, then a wait."""
    return workflow(
        *[
            step(
                f"s{i}",
                "test.call_then_wait",
                config={"seconds": seconds},
                depends_on=[f"s{i - 1}"] if i else [],
            )
            for i in range(count)
        ],
        name=name,
    )
