"""Which files of a corpus folder are read, and reading one within its size bound.

A corpus folder is hostile input: its files may be huge, and its symlinks may point anywhere
(``notes.md -> ~/.ssh/id_rsa``). What is indexed stays inside the folder given:

* a symlink whose target lies outside the folder is skipped and listed, file or folder, unless
  :attr:`CorpusLimits.follow_symlinks` says to follow it (a folder followed is walked once, however
  many links lead to it: no loop);
* a symlink to a folder inside the folder is not walked again (its files are indexed where they
  are); a symlink to a file inside the folder is indexed under its own name;
* a file is opened one name of its path at a time, each with ``O_NOFOLLOW`` (a file or a folder
  on its way swapped for a symlink after the listing is refused, not followed) and must be a
  regular file (a FIFO or device is refused unread), at most
  :attr:`CorpusLimits.max_document_bytes` long.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from research.corpus_limits import CorpusLimits
from research.corpus_records import CorpusFolderError, SkippedFile, _broken_link
from research.loaders import SUPPORTED_SUFFIXES, UnreadableDocument, well_formed

NOT_UTF8_NAME = "its name is not UTF-8 text; rename it to index it"
"""A name read with surrogateescape names the document (its id, stored as UTF-8 text); made
readable it could be another file's name, so the file is skipped rather than renamed."""
OUTSIDE = "a symlink to outside the folder; not followed (corpus.follow_symlinks: true follows it)"


@dataclass(frozen=True)
class FolderListing:
    """A folder's files to index (each with the path read for it) and the entries skipped."""

    files: list[tuple[Path, Path]]
    """(the path inside the folder, which names the document; the real file read)."""
    skipped: list[SkippedFile]


def folder_root(folder: str | Path) -> Path:
    """The real folder ``folder`` names; :class:`CorpusFolderError` when it is none."""
    try:
        root = Path(folder).expanduser().resolve(strict=True)
    except (RuntimeError, OSError) as error:
        looped = isinstance(error, RuntimeError) or getattr(error, "errno", None) == errno.ELOOP
        raise CorpusFolderError(
            f"{folder}: a symlink loop; pass the real folder of md/rst/txt/html/pdf files"
            if looped
            else f"{folder}: not a folder; pass a directory of md/rst/txt/html/pdf files"
        ) from None
    if well_formed(str(root)) != str(root):
        raise CorpusFolderError(
            f"{folder}: its path is not UTF-8 text; rename the folder (or one above it)"
        )
    if not root.is_dir():
        raise CorpusFolderError(
            f"{folder}: not a folder; pass a directory of md/rst/txt/html/pdf files"
        )
    return root


def list_folder(root: Path, limits: CorpusLimits) -> FolderListing:
    """The supported files under ``root`` (a resolved folder), in path order."""
    files: list[tuple[Path, Path]] = []
    skipped: list[SkippedFile] = []
    walked: set[Path] = {root}
    pending = [(root, root)]  # (the folder as named inside root, the real folder listed)
    while pending:
        named, real = pending.pop()
        try:
            entries = sorted(os.scandir(real), key=lambda entry: entry.name)
        except OSError as exc:
            skipped.append(SkippedFile(str(named), f"cannot list: {exc.strerror or exc}"))
            continue
        for entry in entries:
            path = named / entry.name
            target = Path(entry.path)
            if entry.is_symlink():
                broken = _broken_link(target)
                if broken:
                    skipped.append(SkippedFile(str(path), broken))
                    continue
                target = target.resolve(strict=True)
                inside = target.is_relative_to(root)
                if not inside and not limits.follow_symlinks:
                    skipped.append(SkippedFile(str(path), OUTSIDE))
                    continue
                if target.is_dir() and (inside or target in walked):
                    continue  # walked where it is (or already once through another link)
            if target.is_dir():
                walked.add(target)
                pending.append((path, target))
            elif path.suffix.lower() in SUPPORTED_SUFFIXES and target.is_file():
                relative = str(path.relative_to(root))
                if well_formed(relative) != relative:
                    skipped.append(SkippedFile(str(path), NOT_UTF8_NAME))
                else:
                    files.append((path, target))
    files.sort()
    return FolderListing(files, skipped)


_FOLDER_ON_THE_WAY = (
    getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
)
"""How a folder on a document's path is opened: ``O_PATH`` (Linux) needs only the permission to
pass through it, as opening the whole path at once did — a home folder of mode 711 is passed, not
read; where there is no ``O_PATH``, for reading. ``O_DIRECTORY`` with ``O_NOFOLLOW`` refuses a
name that is a symlink now."""


def _open_following_no_link(path: Path) -> int:
    """``path`` (absolute, as :func:`list_folder` found it: no symlink in it) opened for reading
    one name at a time, none followed if it is a symlink now."""
    folder = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in path.parts[1:-1]:
            try:
                inner = os.open(name, _FOLDER_ON_THE_WAY, dir_fd=folder)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnreadableDocument(
                        f"{name} is no longer a folder (a symlink or a file now); not followed"
                    ) from None
                raise
            os.close(folder)
            folder = inner
        try:
            return os.open(
                path.name,
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                dir_fd=folder,
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnreadableDocument(
                    f"{path.name} became a symlink while it was indexed; not followed"
                ) from None
            raise
    finally:
        os.close(folder)


def read_document(path: Path, limits: CorpusLimits) -> bytes:
    """``path``'s bytes: a regular file, reached through no symlink, at most
    ``limits.max_document_bytes``.

    Raises :class:`UnreadableDocument` (with the remedy) past the bound, for a file that is not
    regular or a path that became a symlink, ``OSError`` when it cannot be read.
    """
    handle = _open_following_no_link(path.absolute())
    with os.fdopen(handle, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise UnreadableDocument(f"{path.name} is not a regular file; not read")
        raw = file.read(limits.max_document_bytes + 1)
    if len(raw) > limits.max_document_bytes:
        raise UnreadableDocument(limits.too_large(path.name, "the file"))
    return raw
