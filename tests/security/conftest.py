"""Hostile content, and how to tell whether any of it reached a terminal raw.

:data:`PAYLOAD` carries one of each attack a text can make on a terminal: an OSC 52 clipboard
write, an OSC 0 window title, ``ESC[2J`` (clear the screen), BEL, the 8-bit C1 CSI (U+009B) and
a right-to-left override (U+202E), each behind a marker word. :func:`assert_no_raw_payload`
looks for each attack's own bytes in what a process wrote to its terminal — the app's own
escape sequences are all there too, so it looks for the payload's distinctive bytes (``ESC]52;``
with the payload's base64, the title ending in BEL, the marker word glued to the sequence) —
and :func:`assert_payload_shown` checks a person sees each attack as text instead
(``SEC-TITLE␛]0;SEC-TITLE␇``), so a test cannot pass because the payload never got there.

The security suite's modules: test_untrusted_text.py (the sanitiser), test_chokepoints.py
(nothing prints around it), test_terminal_escapes.py (every command and app surface in a real
pseudo-terminal), test_terminal_guard.py (the app's line filter), test_server_responses.py (a
model's answer from a hostile server), test_serve_auth.py (the served app), test_inputs.py
(inputs, template expansion, symlinks, keys over http), test_hostile_server.py (bounded streams
and bodies) and test_hostile_documents.py (hostile corpus files).
"""

from __future__ import annotations

import base64
import json
import subprocess
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pexpect

from tests.tui.terminal import COLUMNS, PROCESS_S, ROWS, WORKBENCH, terminal_env

CLIPBOARD = base64.b64encode(b"SEC-CLIPBOARD").decode()
ATTACKS = {
    "OSC 52 clipboard write": f"SEC-CLIP\x1b]52;c;{CLIPBOARD}\x07",
    "OSC 0 window title": "SEC-TITLE\x1b]0;SEC-TITLE\x07",
    "ESC[2J clear screen": "SEC-CLEAR\x1b[2J",
    "BEL": "SEC-BELL\x07",
    "C1 CSI (U+009B)": "SEC-C1\x9b31m",
    "right-to-left override (U+202E)": "SEC-\u202eRTL",
}
PAYLOAD = " ".join(ATTACKS.values())
RAW = {
    "OSC 52 clipboard write": f"\x1b]52;c;{CLIPBOARD}".encode(),
    "OSC 0 window title": b"\x1b]0;SEC-TITLE",
    "ESC[2J clear screen": b"SEC-CLEAR\x1b[2J",
    "BEL": b"SEC-BELL\x07",
    "C1 CSI (U+009B)": "SEC-C1\x9b".encode(),
    "right-to-left override (U+202E)": "SEC-\u202e".encode(),
}
"""Each attack's bytes as they would reach a terminal raw (UTF-8, as Python writes text)."""
SHOWN = {
    "OSC 52 clipboard write": f"SEC-CLIP␛]52;c;{CLIPBOARD}␇",
    "OSC 0 window title": "SEC-TITLE␛]0;SEC-TITLE␇",
    "ESC[2J clear screen": "SEC-CLEAR␛[2J",
    "BEL": "SEC-BELL␇",
    "C1 CSI (U+009B)": "SEC-C1<U+009B>31m",
    "right-to-left override (U+202E)": "SEC-<U+202E>RTL",
}
"""Each attack as a person sees it once it is shown instead of sent."""
MARKUP = "[/] [link=https://evil.example/]SEC-LINK[/link] [@click=app.quit]SEC-CLICK[/]"
"""Rich and Textual markup in hostile text: ``[/]`` closes nothing (a markup error stops the app),
``[link=…]`` would make the terminal a hyperlink (OSC 8), ``[@click=…]`` an action. The hostile
workflows carry it after :data:`PAYLOAD`; shown, it is text."""
MARKUP_RAW = b";https://evil.example/"
"""The hyperlink's target as only an OSC 8 sequence writes it (shown, it follows ``link=``)."""


def assert_no_raw_payload(written: bytes, surface: str) -> None:
    """No attack of :data:`PAYLOAD` is in ``written`` (what a process wrote to a terminal)."""
    reached = [attack for attack, raw in RAW.items() if raw in written]
    reached += ["a hyperlink from markup (OSC 8)"] if MARKUP_RAW in written else []
    assert not reached, f"{surface}: raw {', '.join(reached)} reached the terminal"


def assert_payload_shown(text: str, surface: str) -> None:
    """Every attack of :data:`PAYLOAD` is in ``text`` (a screen, a printout) as visible text."""
    missing = [attack for attack, shown in SHOWN.items() if shown not in text]
    assert not missing, f"{surface}: {', '.join(missing)} not shown as text in:\n{text}"


JOINERS = {"\u200c", "\u200d"}
"""Zero-width non-joiner and joiner: scripts and emoji sequences need them, so they stay."""


def acted_on(char: str) -> bool:
    """What a terminal acts on or what hides text, from the Unicode database: controls but tab and
    newline (Cc), format characters (Cf) but the joiners, line and paragraph separators, and
    surrogates."""
    if char in "\n\t" or char in JOINERS:
        return False
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")


def yaml_string(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (JSON's escapes are YAML's)."""
    return json.dumps(text)


def hostile_workflow(folder: Path, name: str = "hostile") -> Path:
    """A workflow file from the internet: its description, an input's default and a failing
    step's message carry :data:`PAYLOAD` and :data:`MARKUP`; ``boom`` fails first, ``after`` is
    left waiting on it."""
    path = folder / f"{name}.yaml"
    payload = yaml_string(f"{PAYLOAD} {MARKUP}")
    path.write_text(
        f"name: {name}\n"
        f"description: {payload}\n"
        "inputs:\n"
        f"  topic: {{type: string, default: {payload}}}\n"
        "steps:\n"
        "  - id: boom\n"
        "    uses: demo.fail\n"
        '    inputs: {topic: "inputs.topic"}\n'
        f"    config: {{message: {payload}}}\n"
        "  - id: after\n"
        "    uses: demo.echo\n"
        "    depends_on: [boom]\n",
        encoding="utf-8",
    )
    return path


def asking_workflow(folder: Path) -> Path:
    """A workflow whose approval prompt carries :data:`PAYLOAD` and :data:`MARKUP`."""
    path = folder / "asking.yaml"
    path.write_text(
        "name: asking\n"
        "steps:\n"
        "  - id: plan\n"
        "    uses: demo.echo\n"
        "    interrupt: {after: true, kind: approval,"
        f" prompt: {yaml_string(f'{PAYLOAD} {MARKUP}')}}}\n",
        encoding="utf-8",
    )
    return path


@dataclass(frozen=True)
class Written:
    """What a command wrote to its terminal (or pipe), and how it ended."""

    output: bytes
    exit_code: int

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")


def in_terminal(
    workspace: Path, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Written:
    """``workbench --workspace WORKSPACE ARGS`` in a COLUMNS x ROWS pseudo-terminal, to its end
    (``env``: variables added to the test terminal's)."""
    child = pexpect.spawn(
        WORKBENCH,
        ["--workspace", str(workspace), *args],
        cwd=str(cwd or workspace),
        env=terminal_env(workspace, **(env or {})),
        dimensions=(ROWS, COLUMNS),
        timeout=PROCESS_S,
    )
    output = child.read()
    child.close()
    assert child.exitstatus is not None, f"workbench {args} ended by signal {child.signalstatus}"
    return Written(output, child.exitstatus)


def piped(workspace: Path, *args: str) -> Written:
    """``workbench --workspace WORKSPACE ARGS`` with its output to a pipe (stdout and stderr)."""
    done = subprocess.run(
        [WORKBENCH, "--workspace", str(workspace), *args],
        cwd=str(workspace),
        env={**terminal_env(workspace), "COLUMNS": str(COLUMNS)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=PROCESS_S,
    )
    return Written(done.stdout, done.returncode)


def run_id_of(workspace: Path) -> str:
    """The one run stored in ``workspace``."""
    [run] = json.loads(piped(workspace, "runs", "list", "--json").output)
    return str(run["run_id"])
