"""The real `workbench` process in a pseudo-terminal (pexpect), read through pyte as a person sees it.

Shared by the end-to-end tests (test_serve_and_e2e.py, test_handover.py). Every wait is
bounded by a number of reads, never skipped.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pyte

WORKBENCH = str(Path(sys.executable).parent / "workbench")
PROJECT = Path(__file__).resolve().parents[2]
COLUMNS, ROWS = 160, 48
F2 = "\x1bOQ"
DOWN = "\x1b[B"
ENTER = "\r"
PROVIDER_ENV_PREFIXES = ("OPENAI", "ANTHROPIC", "GEMINI", "AZURE_OPENAI", "OLLAMA")


class Terminal:
    """A pexpect child rendered by pyte, so assertions read the screen a person sees."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)

    def pump(self) -> None:
        try:
            while True:
                self.stream.feed(self.child.read_nonblocking(65536, timeout=0.05))
        except (pexpect.TIMEOUT, pexpect.EOF):
            return

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait_for(self, words: str, rounds: int = 1200) -> None:
        for _ in range(rounds):
            self.pump()
            if words in self.text():
                return
        raise AssertionError(f"{words!r} never appeared on screen:\n{self.text()}")

    def quit(self) -> None:
        """Ctrl+Q, then wait for the process to end."""
        self.child.sendcontrol("q")
        self.child.expect(pexpect.EOF, timeout=30)

    def close(self) -> None:
        """Kill the process if it still runs (a failed test)."""
        if self.child.isalive():
            self.child.terminate(force=True)


def terminal_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a workbench in a COLUMNS x ROWS xterm: its config file under ``tmp_path``,
    no WORKBENCH_HOME (pass ``--workspace`` or ``WORKBENCH_HOME=`` in ``extra``) and no real provider,
    so runs stay on loopback and the built-in model."""
    env = {
        **os.environ,
        "WORKBENCH_CONFIG": str(tmp_path / "config.yaml"),
        "TERM": "xterm-256color",
        "COLUMNS": str(COLUMNS),
        "LINES": str(ROWS),
    }
    for name in [
        n
        for n in env
        if n in ("WORKBENCH_HOME", "GITHUB_TOKEN")
        or n.endswith("_API_KEY")
        or n.startswith(PROVIDER_ENV_PREFIXES)
    ]:
        env.pop(name)
    env.update(extra)
    return env


def spawn_workbench(args: list[str], env: dict[str, str]) -> Terminal:
    """``workbench ARGS`` started in the project folder, in a COLUMNS x ROWS pseudo-terminal."""
    child = pexpect.spawn(WORKBENCH, args, cwd=str(PROJECT), env=env, dimensions=(ROWS, COLUMNS))
    return Terminal(child)
