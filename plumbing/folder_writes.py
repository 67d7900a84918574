"""Files the workbench writes into a folder of its own (a run's folder, the exports), never
through a symbolic link.

A link planted where a file will be written (``runs/<id>/report.md → ~/.bashrc``) would make
an ordinary ``open(path, "w")`` overwrite whatever it points at, outside the workspace. Here the
folder is opened without following a link (``O_NOFOLLOW``: a folder that is itself a link is
refused), the text goes to a new temporary file in it (``O_EXCL | O_NOFOLLOW``, relative to the
folder's descriptor) and is renamed over the name: a rename replaces the directory entry — a
link there included — and never writes through it. A reader sees the old file or the new one,
never half of one.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

__all__ = ["LinkRefused", "write_text_into"]


class LinkRefused(OSError):
    """The folder to write into is a symbolic link; ``str()`` is one line for the person."""

    def __init__(self, folder: Path) -> None:
        super().__init__(
            errno.ELOOP,
            f"{folder} is a symbolic link; the workbench writes only into a real folder"
            " — remove the link",
        )

    def __str__(self) -> str:
        return str(self.strerror)


def write_text_into(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` (UTF-8) as ``folder/name``, replacing what is there, following no link."""
    try:
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.ENOTDIR) and folder.is_symlink():
            raise LinkRefused(folder) from None
        raise
    try:
        temporary = f".{name}.{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        file_fd = os.open(temporary, flags, 0o666, dir_fd=folder_fd)
        try:
            with os.fdopen(file_fd, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=folder_fd)
            except FileNotFoundError:
                pass
            raise
    finally:
        os.close(folder_fd)
    return folder / name
