"""Workers on PostgreSQL (printed, never asserted): how soon another worker takes a run over
after ``kill -9`` of the worker driving it, and how many runs 1, 2 and 4 workers complete per
minute — side by side in one run.

Every worker is a real ``workbench worker`` process on a real local server (tests/pg.py: Unix
socket, ``fsync=off``). Takeover time is from the instant of the kill to the instant another
worker claims the run's lease (its ``claimed_ts``: the new epoch), at the default settings and
at tight ones (:data:`~tests.worker.workers.TIGHT`); after each try the run is cancelled
through the queue, and a fresh worker replaces the killed one. Throughput is
:data:`RUNS` runs of :data:`STEPS` I/O-bound steps (one journaled call, then a wait) queued at
at once, after a warm-up batch of as many runs as the workers have slots (first-run costs:
imports, the workspace's default corpus), timed from the first enqueue to the last run
COMPLETED, with the CPU time the workers spent meanwhile: when the machine's cores are busy
(other work, or the workers' own CPU per run), more workers add no runs per minute.
"""

from __future__ import annotations

import math
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path

from engine.spec import WorkflowDefinition
from engine.store.postgres import PostgresRunStore
from tests.engine.kahn_helpers import step, workflow
from tests.pg import PostgresServer
from tests.worker.workers import (
    TIGHT,
    WorkerProcess,
    chain,
    holder_pid,
    query,
    run_status,
    wait_for,
    workers,
)
from tui.worker.queue import cancel_run, enqueue_run
from tui.worker.settings import WorkerSettings

TAKEOVER_TRIES = 5
RUNS = 24
STEPS = 3
STEP_S = 0.2
WORKER_COUNTS = (1, 2, 4)
FAST_POLL = ("--poll", "0.5")
"""Throughput workers read the queue twice a second besides its notifications."""

LONG_RUN = workflow(step("long", "test.call_then_wait", config={"seconds": 600.0}), name="long")
"""A run that is still in its step whenever its worker is killed (cancelled after each try)."""


def _lease(address: str, run_id: str) -> tuple[int, float] | None:
    rows = query(address, "SELECT epoch, claimed_ts FROM run_leases WHERE run_id = %s", run_id)
    return (int(rows[0][0]), float(rows[0][1])) if rows else None


def _in_step(address: str, run_id: str) -> int | None:
    """The pid of the worker driving ``run_id`` once its step has started, else None."""
    started = query(
        address,
        "SELECT count(*) FROM events WHERE run_id = %s AND kind = 'step_started'",
        run_id,
    )[0][0]
    return holder_pid(address, run_id) if started else None


def takeover_seconds(server: PostgresServer, folder: Path, options: tuple[str, ...]) -> list[float]:
    """Seconds from ``kill -9`` of a run's worker to another worker's claim, per try."""
    address = server.database()
    with workers(address, folder, 2, *options, "--concurrency", "1") as pool:
        return [
            one_takeover(address, pool, folder, options, replacement=f"w{2 + attempt}")
            for attempt in range(TAKEOVER_TRIES)
        ]


def one_takeover(
    address: str,
    pool: list[WorkerProcess],
    folder: Path,
    options: tuple[str, ...],
    replacement: str,
) -> float:
    """Kill the worker of a new run mid-step; the seconds until another claims the run. The
    run is cancelled after, and a new worker named ``replacement`` joins ``pool``."""
    with PostgresRunStore(address, pool_size=1) as store:
        run_id = enqueue_run(store, LONG_RUN, {})
    pid = wait_for("the run in its step", lambda: _in_step(address, run_id))
    first = _lease(address, run_id)
    assert first is not None
    (victim,) = [w for w in pool if w.pid == pid]
    killed_at = time.time()
    victim.signal(signal.SIGKILL)

    def taken() -> tuple[int, float] | None:
        lease = _lease(address, run_id)
        return lease if lease is not None and lease[0] > first[0] else None

    seconds = wait_for("another worker to take the run", taken)[1] - killed_at
    victim.process.wait()
    pool.remove(victim)
    victim.stop()
    with PostgresRunStore(address, pool_size=1) as store:
        cancel_run(store, run_id)
    wait_for("the run cancelled", lambda: run_status(address, run_id) == "CANCELLED")
    pool.append(WorkerProcess(address, folder, replacement, *options, "-c", "1"))
    return seconds


def cpu_seconds(pid: int) -> float:
    """CPU time a live process has used (user + system), from Linux's ``/proc/PID/stat``: no
    dependency added for one figure of a benchmark."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runs_per_minute(server: PostgresServer, folder: Path, count: int) -> tuple[float, float]:
    """Runs completed per minute by ``count`` workers already started, and the workers' CPU
    seconds per run."""
    address = server.database()
    io_bound = chain("io_bound", STEPS, STEP_S)
    warm_up = count * WorkerSettings().concurrency
    with workers(address, folder, count, *FAST_POLL) as pool:
        _complete(address, io_bound, warm_up)  # first runs: imports, the workspace's corpus
        cpu_before = sum(cpu_seconds(w.pid) for w in pool)
        started = time.perf_counter()
        _complete(address, io_bound, RUNS, done_before=warm_up)
        elapsed = time.perf_counter() - started
        cpu = sum(cpu_seconds(w.pid) for w in pool) - cpu_before
    return RUNS / elapsed * 60.0, cpu / RUNS


def _complete(address: str, workflow: WorkflowDefinition, runs: int, done_before: int = 0) -> None:
    """Queue ``runs`` runs of ``workflow`` and wait until they have completed."""
    with PostgresRunStore(address, pool_size=1) as store:
        for _ in range(runs):
            enqueue_run(store, workflow, {})
    wait_for(
        f"{runs} runs completed",
        lambda: (
            query(address, "SELECT count(*) FROM runs WHERE status = 'COMPLETED'")[0][0]
            == done_before + runs
        ),
        deadline_s=600.0,
    )


def _percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (few samples: no interpolation between them)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def main() -> None:
    from tests.pg import postgres_server
    from tui.launch.stores import upgrade_database

    defaults = WorkerSettings()
    tight = dict(zip(TIGHT[::2], TIGHT[1::2], strict=True))
    settings = {
        "default": (
            (),
            f"heartbeat {defaults.heartbeat_s:g} s, stalled after {defaults.stalled_after_s:g} s,"
            f" poll {defaults.poll_s:g} s",
        ),
        "tight": (
            TIGHT,
            f"heartbeat {tight['--heartbeat']} s, stalled after {tight['--stalled-after']} s,"
            f" poll {tight['--poll']} s",
        ),
    }
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            postgres_server(upgrade_database) as server,
        ):
            print(f"takeover after kill -9 of a run's worker ({TAKEOVER_TRIES} tries each):")
            for name, (options, described) in settings.items():
                where = Path(folder) / name
                where.mkdir()
                seconds = takeover_seconds(server, where, options)
                print(
                    f"  {name:<8} p50 {statistics.median(seconds):5.1f} s"
                    f"  p95 {_percentile(seconds, 0.95):5.1f} s"
                    f"  (min {min(seconds):.1f}, max {max(seconds):.1f}; {described})",
                    flush=True,
                )
            print(
                f"runs completed per minute ({RUNS} runs of {STEPS} I/O-bound steps of"
                f" {STEP_S:g} s, concurrency {defaults.concurrency} per worker):"
            )
            rates: dict[int, float] = {}
            for count in WORKER_COUNTS:
                where = Path(folder) / f"throughput-{count}"
                where.mkdir()
                rates[count], cpu_per_run = runs_per_minute(server, where, count)
                print(
                    f"  {count} worker(s) {rates[count]:7.1f} runs/min"
                    f"  ({rates[count] / rates[WORKER_COUNTS[0]]:.2f}x one worker;"
                    f" workers' CPU {cpu_per_run:.2f} s per run)",
                    flush=True,
                )
            print(f"  (load average when done: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    except BaseException as error:  # pytest's skip outside pytest: no server installed
        if type(error).__name__ not in ("Skipped", "Failed"):
            raise
        print(f"  not measured: {error}")


if __name__ == "__main__":
    main()
