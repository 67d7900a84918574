"""Real full disks for the fault tests: a tmpfs of the test's own, and a file that fills it."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def tmpfs(mount_point: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (mount's syntax: ``2m``) at ``mount_point`` while the block runs.

    Skips the test, saying why, where mounting is refused (it needs root or CAP_SYS_ADMIN).
    """
    mount_point.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(
            f"a full disk needs a tmpfs of its own, and mount was refused "
            f"({mounted.stderr.strip()}): run the suite as root or with CAP_SYS_ADMIN"
        )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(folder: Path, room: int = 0) -> Path:
    """Write a filler file until the disk says it is full, then give back ``room`` bytes."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:
        for chunk in (1 << 16, 1 << 12, 1 << 9, 1):
            try:
                while True:
                    out.write(b"\0" * chunk)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
    if room:
        os.truncate(filler, max(0, filler.stat().st_size - room))
    return filler
