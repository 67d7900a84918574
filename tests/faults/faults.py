"""Real faults put on a copy of the template workspace, and taken off again.

* ``read_only`` — the workspace and its files lose their write bits, and the command runs
  without root's capabilities (``setpriv``), so the permission errors are the kernel's own.
* ``full_disk`` — the workspace lives on a tmpfs of its own that a filler file has filled.
* ``locked`` — another process holds every workspace database with ``BEGIN EXCLUSIVE``.
* ``damaged`` — each database's first page (its schema) is overwritten with junk.

Each yields a :class:`Faulted`: the workspace, the prefix its commands run under, and
``release`` (give the permissions back, free the space, end the lock) so the checks that
follow see what a person would after fixing the cause.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.disks import fill, tmpfs
from tests.faults.workspace import DATABASES, Template, copy_template

DROP_CAPABILITIES = ("setpriv", "--inh-caps=-all", "--bounding-set=-all", "--")
"""Run as the same user without any capability: root loses its override of file permissions."""
DISK_SIZE = "64m"
DAMAGE = bytes(range(256)) * 16
"""Junk written over page 1 after the 100-byte header: the schema no database can do without."""


@dataclass
class Faulted:
    workspace: Path
    prefix: Sequence[str] = ()
    _release: list[Callable[[], None]] = field(default_factory=list)

    def release(self) -> None:
        while self._release:
            self._release.pop()()


def _privilege_prefix() -> Sequence[str]:
    if os.geteuid() != 0:
        return ()  # an ordinary user meets the permission bits without help
    if shutil.which("setpriv") is None:
        pytest.skip(
            "running as root and setpriv (util-linux) is missing: cannot drop CAP_DAC_OVERRIDE"
        )
    probe = subprocess.run([*DROP_CAPABILITIES, "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr.decode().strip()}")
    return DROP_CAPABILITIES


def _set_writable(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode
        os.chmod(path, mode | 0o200 if writable else mode & ~0o222)


@contextlib.contextmanager
def read_only(template: Template, root: Path) -> Iterator[Faulted]:
    prefix = _privilege_prefix()
    workspace = copy_template(template, root / "ws")
    _set_writable(workspace, False)
    faulted = Faulted(workspace, prefix, [lambda: _set_writable(workspace, True)])
    try:
        yield faulted
    finally:
        faulted.release()


@contextlib.contextmanager
def full_disk(template: Template, root: Path, room: int = 0) -> Iterator[Faulted]:
    """The workspace on a tmpfs of its own, filled but for ``room`` bytes."""
    with tmpfs(root / "disk", DISK_SIZE) as disk:
        workspace = copy_template(template, disk / "ws")
        faulted = Faulted(workspace, (), [fill(disk, room).unlink])
        yield faulted
        faulted.release()


LOCK_HOLDER = """
import sqlite3, sys
held = []
for path in sys.argv[1:]:
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    db.execute("BEGIN EXCLUSIVE")
    held.append(db)
print("held", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def locked(template: Template, root: Path) -> Iterator[Faulted]:
    workspace = copy_template(template, root / "ws")
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, *(str(workspace / name) for name in DATABASES)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"

    def end_lock() -> None:
        holder.communicate(timeout=60)

    faulted = Faulted(workspace, (), [end_lock])
    try:
        yield faulted
    finally:
        faulted.release()


@contextlib.contextmanager
def damaged(template: Template, root: Path) -> Iterator[Faulted]:
    workspace = copy_template(template, root / "ws")
    for name in DATABASES:
        with (workspace / name).open("r+b") as file:
            file.seek(100)
            file.write(DAMAGE[: 4096 - 100])
    yield Faulted(workspace)


FAULTS: dict[str, Callable[[Template, Path], contextlib.AbstractContextManager[Faulted]]] = {
    "read-only": read_only,
    "full-disk": full_disk,
    "locked": locked,
    "damaged": damaged,
}
