"""The real `workbench` executable in a subprocess or a pseudo-terminal, and what a person sees of it.

``outcome`` runs one command to its end; ``spawn`` starts one to be killed or raced;
``app_outcome`` starts the app in a pseudo-terminal and quits it once Home is on screen (or
reads the one line it printed instead of starting). A prefix (``setpriv …``) runs the command
without root's capabilities.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pexpect

from tests.tui.terminal import COLUMNS, PROJECT, ROWS, WORKBENCH, Terminal
from tui.entry import STARTING_APP

COMMAND_TIMEOUT_S = 180
HOME_TITLE = "Workflows"
"""Words on the app's Home screen: the app started."""
_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][A-Za-z0-9]|[=>])")


@dataclass(frozen=True)
class Outcome:
    """How a command ended: its exit code and what it printed."""

    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        """What it printed, less the line `workbench` shows while it starts (tui/entry.py)."""
        return [line for line in self.stderr.strip().splitlines() if line != STARTING_APP]


def environment() -> dict[str, str]:
    """The suite's hermetic environment (tests/conftest.py), wide enough that lines never wrap."""
    env = {**os.environ, "COLUMNS": "250", "TERM": "xterm-256color", "LINES": str(ROWS)}
    env.pop("WORKBENCH_HOME", None)
    env.pop("WORKBENCH_TRACEBACK", None)
    return env


def argv(workspace: Path, args: Sequence[str], prefix: Sequence[str] = ()) -> list[str]:
    return [*prefix, WORKBENCH, "--workspace", str(workspace), *args]


def spawn(
    workspace: Path, args: Sequence[str], *, silent_stdin: bool = True
) -> subprocess.Popen[str]:
    """``workbench ARGS`` started; with ``silent_stdin`` its stdin is a pipe nobody writes to
    (a prompt then waits on it), else it is closed."""
    return subprocess.Popen(
        argv(workspace, args),
        cwd=PROJECT,
        env=environment(),
        stdin=subprocess.PIPE if silent_stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen[str]) -> Outcome:
    stdout, stderr = process.communicate(timeout=COMMAND_TIMEOUT_S)
    return Outcome(process.returncode, stdout, stderr)


def outcome(
    workspace: Path,
    args: Sequence[str],
    prefix: Sequence[str] = (),
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> Outcome:
    """Run ``workbench ARGS`` to its end, stdin closed (killed after ``timeout_s``: a hang)."""
    done = subprocess.run(
        argv(workspace, args, prefix),
        cwd=PROJECT,
        env=environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def spawn_app(workspace: Path, args: Sequence[str], prefix: Sequence[str] = ()) -> Terminal:
    """``workbench ARGS`` (the app) in a COLUMNS x ROWS pseudo-terminal."""
    command = argv(workspace, args, prefix)
    child = pexpect.spawn(
        command[0],
        command[1:],
        cwd=str(PROJECT),
        env=environment(),
        dimensions=(ROWS, COLUMNS),
        encoding=None,
    )
    return Terminal(child)


def app_outcome(workspace: Path, prefix: Sequence[str] = ()) -> Outcome:
    """Start the app: either it prints its one line and exits, or Home appears and Ctrl+Q quits it.

    The pseudo-terminal joins stdout and stderr: what the app printed is in ``stderr``,
    escape sequences removed; ``stdout`` holds the last screen when the app started.
    """
    term = spawn_app(workspace, ["app"], prefix)
    try:
        printed = b""
        while True:
            try:
                chunk = term.child.read_nonblocking(65536, timeout=COMMAND_TIMEOUT_S)
            except pexpect.EOF:
                break
            printed += chunk
            term.stream.feed(chunk)
            if b"\x1b[?1049h" in printed:  # the alternate screen: Textual took the terminal
                term.wait_for(HOME_TITLE)
                screen = term.text()
                term.quit()
                term.child.close()
                return Outcome(term.child.exitstatus or 0, screen, "")
        term.child.close()
        text = _ANSI.sub("", printed.decode("utf-8", "replace")).replace("\r", "")
        return Outcome(term.child.exitstatus, "", text)
    finally:
        term.close()
