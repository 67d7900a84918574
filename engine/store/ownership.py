"""Which process drives a RUNNING run, and whether that process still runs.

A RUNNING run records the process that drives it (:class:`RunOwner`: host, pid,
the pid's start time and a per-process token) from ``create_run`` or
``claim_owner`` (resume) until ``set_status`` moves it out of RUNNING. Reads
report whether that process still runs (:func:`owner_status`), so a run whose
process was killed shows as stopped and a live one is not resumed twice.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path
from typing import Any, Literal

from engine.states import RunStatus
from plumbing.frozen import Frozen


class RunOwned(RuntimeError):
    """This process may not drive the run: another live process does (or, for
    :class:`RunFinishedMeanwhile`, did and finished it). ``str()`` is one line."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


class RunFinishedMeanwhile(RunOwned):
    """The run finished (in another process) before this one could claim it."""


class RunOwner(Frozen):
    """The process that drives a RUNNING run."""

    host: str
    pid: int
    token: str
    """Random per process: tells this process's own claims from another's that got the same pid."""
    proc_start: str | None = None
    """The pid's start time (Linux ``/proc/PID/stat``), so a reused pid is not taken for the owner."""
    claimed_ts: float = 0.0

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


OwnerStatus = Literal["", "alive", "gone", "unknown"]


def _proc_start(pid: int) -> tuple[str | None, bool]:
    """(the start time of ``pid``, whether it is a zombie); (None, False) where /proc is not readable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None, False
    fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "; comm may hold spaces
    return (fields[19] if len(fields) > 19 else None), (fields[0] == "Z" if fields else False)


_ME: dict[int, RunOwner] = {}


def this_process() -> RunOwner:
    """The :class:`RunOwner` this process records (a new one after ``fork``)."""
    pid = os.getpid()
    if pid not in _ME:
        _ME.clear()
        _ME[pid] = RunOwner(
            host=socket.gethostname(),
            pid=pid,
            token=uuid.uuid4().hex,
            proc_start=_proc_start(pid)[0],
        )
    return _ME[pid]


def owner_status(owner: RunOwner | None) -> OwnerStatus:
    """alive, gone (or never recorded), or unknown (another host: its pids cannot be checked)."""
    if owner is None:
        return "gone"
    me = this_process()
    if owner.host != me.host:
        return "unknown"
    if owner.pid == me.pid:
        return "alive" if owner.token == me.token else "gone"
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:
        pass  # exists, another user's
    except OSError:
        return "unknown"
    start, zombie = _proc_start(owner.pid)
    if zombie or (owner.proc_start and start and start != owner.proc_start):
        return "gone"
    return "alive"


def with_owner_status(values: dict[str, Any], owner: RunOwner | None) -> dict[str, Any]:
    """A stored run's fields plus its owner and the owner's status (RUNNING runs only)."""
    running = values["status"] in (RunStatus.RUNNING, RunStatus.RUNNING.value)
    return {
        **values,
        "owner": owner if running else None,
        "owner_status": owner_status(owner) if running else "",
    }
