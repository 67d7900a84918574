"""Plain lines to the terminal, the only way the commands print one: every text passes
:func:`plumbing.untrusted_text.for_terminal` here, so no control sequence from a document, a
model answer, a workflow file or a server's message reaches the terminal raw (DESIGN §12).
Tables, colours and progress bars go through :class:`tui.present.console.SafeConsole`, which
cleans the same way; tests/security/test_chokepoints.py checks nothing in tui/ prints otherwise.

At the bottom of the app's layers (click and plumbing only), so the config, the failure
boundary and the commands all print through it, and `workbench validate` still imports no rich.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from plumbing.untrusted_text import for_terminal, json_for_terminal


def echo(message: str = "", *, err: bool = False, nl: bool = True, one_line: bool = False) -> None:
    """``message`` on stdout (on stderr with ``err``), every control character shown, not sent.

    ``one_line``: a line made of values from outside (a file's name, a document's title) stays
    one line — a line break in a value would start a line that reads as the workbench's own
    (``error: …``)."""
    click.echo(for_terminal(message, one_line=one_line), err=err, nl=nl)


def echo_json(data: Any) -> None:
    """``data`` as indented JSON on stdout."""
    echo_json_text(json.dumps(data, indent=2, ensure_ascii=False))


def echo_json_text(text: str, *, nl: bool = True) -> None:
    """Serialised JSON on stdout, exact, with every character a terminal would act on written as
    its JSON escape (JSON escapes C0 controls itself, not C1 or bidi overrides)."""
    click.echo(json_for_terminal(text), nl=nl)


class _CleanLastResort(logging.Handler):
    """logging's handler of last resort, cleaned: the message alone on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(for_terminal(self.format(record)) + "\n")
        except Exception:  # logging's contract: a handler reports its own failure, never raises
            self.handleError(record)


def clean_last_resort_logging() -> None:
    """A record logged where no handler is configured (a library's warning) reaches stderr
    cleaned; logging prints it raw, and ``logging.lastResort`` is the documented place to
    change that."""
    logging.lastResort = _CleanLastResort(logging.WARNING)
