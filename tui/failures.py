"""The one error boundary of the ``workbench`` executable and the app's start.

Whatever stops a command reaches the person as ONE line on stderr — ``error: …`` naming
the file or value and what to do — with a documented exit code, never a traceback:

* the typed errors other packages raise for a file or value they cannot use (a run store
  or statistics file that cannot be opened, an unknown or busy run, …) print their own line;
* an operating-system or SQLite error is explained by its error number or SQLite result
  code, never by its wording: a read-only workspace, a full disk, a database another
  process holds locked, a damaged file;
* Ctrl-C before a command has started its work (Python is still importing) says so;
* a usage mistake click finds (an option's value out of range or of the wrong kind, an unknown
  option or command, a missing argument) is click's own sentence and where the command's
  options are listed, on one line — click would print four (usage, hint, blank, error).

Every one of these exits with :data:`BAD_INPUT` (2) except Ctrl-C (:data:`INTERRUPTED`,
130, the shell's convention). A failure nobody anticipated — a bug — is one line too,
exit :data:`INTERNAL` (70), naming the variable that shows its traceback. Nothing here
writes anywhere: what is already stored stays exactly as it was.

Ctrl-C while Python still imports the commands is caught by :mod:`tui.entry`, the
executable's first code.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from tui.echo import echo
from tui.exit_codes import BAD_INPUT, INTERNAL, INTERRUPTED, INTERRUPTED_LINE

TRACEBACK_ENV = "WORKBENCH_TRACEBACK"

_FULL = "its disk is full ({detail}) — free some space on that disk"
_READ_ONLY = (
    "cannot be written ({detail}) — make it and its files writable by this user, "
    "or choose another --workspace"
)
_LOCKED = (
    "a database in it is held locked by another process ({detail}) — try again when that "
    "process ends"
)
_DAMAGED = (
    "a database in it is damaged ({detail}) — move the damaged file aside and a new one is "
    "started; nothing in it was changed"
)
_IO = "its disk reported an I/O error ({detail}) — check that the disk has free space and works"

_ERRNOS = {
    errno.ENOSPC: _FULL,
    errno.EDQUOT: "its disk quota is used up ({detail}) — free some space or raise the quota",
    errno.EFBIG: (
        "grew past the file size this process may write ({detail}) — raise the limit "
        "(ulimit -f) or free space"
    ),
    errno.EACCES: _READ_ONLY,
    errno.EPERM: _READ_ONLY,
    errno.EROFS: _READ_ONLY,
    errno.EIO: _IO,
    errno.EISDIR: "is a folder where a file was expected ({detail}) — name a file",
    errno.ENOTDIR: "a part of the path is a file, not a folder ({detail}) — check the path",
    errno.ENOENT: "does not exist ({detail}) — check the path",
}
"""OSError numbers a person can act on -> what to say."""

_RUN_HINT = (
    "; runs already stored are kept, and one that stopped continues with "
    "`workbench resume RUN_ID` (see `workbench runs list`)"
)


class Failure(click.ClickException):
    """One line on stderr (``error: …``) and exit code 2; what every explained failure becomes."""

    exit_code = BAD_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(message.split()))

    def show(self, file: Any = None) -> None:
        echo(f"error: {self.message}", err=True)


class Interrupted(Failure):
    """Ctrl-C before the command started its work."""

    exit_code = INTERRUPTED


class UnexpectedFailure(Failure):
    """A failure nobody anticipated: a bug, still one line."""

    exit_code = INTERNAL


def _one_line_errors() -> tuple[type[BaseException], ...]:
    """Typed errors whose ``str()`` is already the one line (imported when a failure happens)."""
    from engine.lifecycle import RunNotResumable
    from engine.run_inputs import InputError
    from engine.sqlite_file import StoreFileError
    from engine.store import InterruptClosed, RunOwned, UnknownRun, UnreadableRun
    from plumbing.postgres import DatabaseError
    from router.errors import StatsFileError
    from tui.client.http import ServerError

    return (
        ServerError,
        StoreFileError,
        StatsFileError,
        DatabaseError,
        RunOwned,
        UnknownRun,
        UnreadableRun,
        InterruptClosed,
        RunNotResumable,
        InputError,
    )


def _sqlite_template(error: BaseException) -> str | None:
    """What to say of an SQLite error, by the fault its result code says (the classification
    every workspace file's opener uses: plumbing/sqlite_files.py); None for any other error.
    sqlite3 is imported when a failure happens, as the typed errors are: `--help` and
    `validate` open no database."""
    import sqlite3

    from plumbing.sqlite_files import SqliteFault, sqlite_fault

    if not isinstance(error, sqlite3.Error):
        return None
    templates = {
        SqliteFault.FULL: _FULL,
        SqliteFault.READ_ONLY: _READ_ONLY,
        SqliteFault.LOCKED: _LOCKED,
        SqliteFault.DAMAGED: _DAMAGED,
        SqliteFault.IO: _IO,
    }
    return templates.get(sqlite_fault(error))


def _leaves(error: BaseException) -> Iterator[BaseException]:
    """``error`` itself, or every exception an exception group holds, depth first."""
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _causes(error: BaseException) -> Iterator[BaseException]:
    """``error``, then what it was raised from (``raise … from``), so a wrapped disk error is found.

    Only explicit causes: an exception merely raised while another was handled is not explained
    by that other one.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else error.__class__.__name__


def _explain_one(error: BaseException, workspace: Path) -> str | None:
    if isinstance(error, _one_line_errors()):
        return _first_line(error)
    template = _sqlite_template(error)
    if template is not None:
        message = f"the workspace {workspace}: " + template.format(detail=_first_line(error))
        return message + (_RUN_HINT if template in (_FULL, _IO) else "")
    if isinstance(error, OSError) and error.errno in _ERRNOS:
        where = error.filename if error.filename is not None else f"the workspace {workspace}"
        detail = error.strerror or _first_line(error)
        message = f"{where}: " + _ERRNOS[error.errno].format(detail=detail)
        return message + (
            _RUN_HINT if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) else ""
        )
    return None


def explain(error: BaseException, workspace: Path) -> Failure:
    """The one line for ``error``, raised while a command worked in ``workspace``."""
    for leaf in _leaves(error):
        for cause in _causes(leaf):
            message = _explain_one(cause, workspace)
            if message is not None:
                return Failure(message)
    leaf = next(_leaves(error))
    return UnexpectedFailure(
        f"unexpected {leaf.__class__.__name__}: {_first_line(leaf)} — this is a bug in "
        f"Research Workbench; run the command again with {TRACEBACK_ENV}=1 to see where "
        "it happened, and report it"
    )


def usage_failure(error: click.UsageError) -> click.ClickException:
    """Click's usage error as the one line: its sentence, then the help that lists what the
    command takes. A group named without its command keeps click's answer, its help."""
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        return error
    where = error.ctx.command_path if error.ctx is not None else "workbench"
    return Failure(f"{error.format_message().rstrip('.')} — see `{where} --help`")


def _interrupted() -> Interrupted:
    return Interrupted(INTERRUPTED_LINE.removeprefix("error: "))


def _workspace(ctx: click.Context) -> Path:
    from tui.paths import default_root

    given = (ctx.find_root().obj or {}).get("workspace")
    return Path(given).expanduser() if given else default_root()


class FailureBoundary(click.Group):
    """The ``workbench`` group: every command runs inside the boundary (see the module doc).

    Click's own exits (``ctx.exit``, one-line :class:`click.ClickException` s such as bad
    input) pass through unchanged; its usage errors become one line (:func:`usage_failure`).
    """

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Ctrl-C while the command line is parsed is the same one line as in a command (click
        would print "Aborted!" and exit 1)."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as error:
            raise usage_failure(error) from None
        except KeyboardInterrupt:
            raise _interrupted() from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            raise usage_failure(error) from None
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            raise _interrupted() from None
        except Exception as error:
            if os.environ.get(TRACEBACK_ENV):
                raise
            raise explain(error, _workspace(ctx)) from None
