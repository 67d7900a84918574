"""The real `workbench` process in a pseudo-terminal (pexpect), read through pyte as a person sees it.

Shared by the end-to-end tests (test_serve_and_e2e.py, test_handover.py). The terminal
answers Textual's query for synchronized output, so the app brackets every frame and the
screen here, like a real terminal, shows only whole frames — never one half painted. Each
key is sent by :meth:`Terminal.press`, which waits for the key's effect on screen before
returning, so keys never run ahead of the repaint.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
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
WAIT_S = 120.0
"""How long an effect may take before the test fails (a loaded CI machine is slow, never this slow)."""
E2E_TIMEOUT_S = 600
"""pytest-timeout of a whole end-to-end test: a research run driven key by key on 2 loaded cores."""
PROCESS_S = 240.0
"""How long a one-shot `workbench` command may take on a loaded machine before the test fails."""
READ_GAP_S = 0.05
"""A read ends after this long without output: the frame written so far is on screen."""
SYNC_QUERY = b"\x1b[?2026$p"
SYNC_SUPPORTED = "\x1b[?2026;2$y"
FRAME_START = b"\x1b[?2026h"
FRAME_END = b"\x1b[?2026l"
FORM_TITLE = re.compile(r"New run · (\S+)")
FIELD_LABEL = re.compile(r"(\w+)(?: \*)?  \(")
"""A form field's label: its input's name, `*` when required, then its description in brackets."""


class Terminal:
    """A pexpect child rendered by pyte, so assertions read the screen a person sees."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self._unshown = b""
        """Output of a frame still arriving (after its start mark, before its end mark)."""

    def pump(self) -> None:
        """Read what the app wrote; show every whole frame of it."""
        try:
            while True:
                self._unshown += self.child.read_nonblocking(65536, timeout=READ_GAP_S)
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass
        if SYNC_QUERY in self._unshown:
            self.child.send(SYNC_SUPPORTED)
            self._unshown = self._unshown.replace(SYNC_QUERY, b"")
        start, end = self._unshown.rfind(FRAME_START), self._unshown.rfind(FRAME_END)
        shown = start if start > end else len(self._unshown)
        self.stream.feed(self._unshown[:shown])
        self._unshown = self._unshown[shown:]

    def text(self) -> str:
        return "\n".join(self.screen.display)

    def until(self, holds: Callable[[], bool], what: str, wait_s: float = WAIT_S) -> None:
        """Read frames until ``holds()``; fail naming ``what`` and showing the screen."""
        deadline = time.monotonic() + wait_s
        while True:
            self.pump()
            if holds():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} never happened; the screen:\n{self.text()}")

    def wait_for(self, words: str, wait_s: float = WAIT_S) -> None:
        self.until(lambda: words in self.text(), f"{words!r} appearing on screen", wait_s)

    def press(self, key: str, effect: Callable[[], bool], what: str) -> None:
        """Send ``key`` and wait for its ``effect`` on screen before anything else is sent."""
        self.child.send(key)
        self.until(effect, f"{what} (after {key!r})")

    def type(self, text: str) -> None:
        """Type ``text`` into the focused field and wait until it shows."""
        self.press(text, lambda: text in self.text(), f"{text!r} showing")

    def form_workflow(self) -> str | None:
        """The workflow whose new-run form Home shows."""
        found = FORM_TITLE.search(self.text())
        return found.group(1) if found else None

    def focused_field(self) -> str | None:
        """The name of the form field drawn focused, None when no one field is.

        A field is its label line with its input box's top edge (``▊▔``) below it; the focused
        box's edge has the focus colour, every other box the same blurred one. Border and layout
        come from one frame, so (unlike the terminal cursor, placed a frame late when the form
        scrolls) the answer is never stale.
        """
        lines, buffer = self.screen.display, self.screen.buffer
        edges: dict[str, str] = {}
        for row in range(ROWS - 1):
            for label in FIELD_LABEL.finditer(lines[row]):
                column = label.start()
                if lines[row + 1][column : column + 2] == "▊▔":
                    edges[label.group(1)] = buffer[row + 1][column].fg
        colours = Counter(edges.values())
        if len(edges) < 3 or len(colours) != 2:
            return None
        return next(name for name, colour in edges.items() if colours[colour] == 1)

    def on_home(self) -> bool:
        return "Recent runs" in self.text() and "Start run" in self.text()

    def choose_workflow(self, name: str) -> None:
        """Move down Home's workflow list, one repaint per key, until ``name``'s form shows."""
        self.until(lambda: self.form_workflow() is not None, "a new-run form")
        while (shown := self.form_workflow()) != name:
            self.press(
                DOWN, lambda: self.form_workflow() != shown, f"the form moving on from {shown}"
            )

    def quit(self) -> None:
        """Ctrl+Q, then wait for the process to end."""
        self.child.sendcontrol("q")
        self.child.expect(pexpect.EOF, timeout=PROCESS_S)

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
