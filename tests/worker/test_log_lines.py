"""A worker's log lines carry text from outside (database errors, step errors, workflow names):
what reaches the terminal has its control characters shown, never sent (issue 27, item 1)."""

from __future__ import annotations

import io
import logging

from tui.commands.worker_cmds import TerminalSafeFormatter

HOSTILE = "step failed: \x1b]52;c;c2VjcmV0\x07 \x1b[2J\u202eevil"


def test_a_log_line_with_escape_sequences_reaches_the_terminal_without_them() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TerminalSafeFormatter("%(message)s"))
    logger = logging.getLogger("workbench.worker.test_log_lines")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("run r1: %s", HOSTILE)
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert written.startswith("run r1: step failed: ")
    assert not any(ord(ch) < 32 and ch != "\n" for ch in written)
    assert "\x1b" not in written and "\x07" not in written and "\u202e" not in written
    assert "␛]52" in written
