"""The ``workbench`` executable's first code: something on screen at once, and Ctrl-C while
Python still imports is one line too.

It imports nothing at the top but the exit codes (a module of constants) — everything the
command needs, click included, is imported inside the guard — so no traceback can come from
start-up. Before that import (a second or more on a loaded machine), a command that takes a while
to show anything says it is starting: the app a line that goes once the app has closed, a
headless run a line that stays. The rest of the boundary (every failure of a running command)
is :mod:`tui.failures`.
"""

import sys

from tui.exit_codes import INTERNAL, INTERRUPTED, INTERRUPTED_LINE

ROOT_OPTIONS_WITH_VALUES = ("--workspace", "--config")
APP_COMMANDS = ("app", "run", "research", "demo")
"""Commands that open the app unless ``--headless`` is given (``app`` always)."""
HEADLESS_COMMANDS = ("run", "research", "resume", "demo", "runs")
STARTING_APP = "Research Workbench: starting…"
ERASE_LINE = "\x1b[1A\x1b[2K"
"""Cursor up one line, clear it: the app's starting line goes once the app has closed."""


def starting_note(argv: list[str]) -> tuple[str, bool] | None:
    """(the line to show while ``workbench ARGV`` starts, whether it goes when the app closes);
    None for a command that answers at once (``--help``, ``validate``, ``runs list``…)."""
    words: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ROOT_OPTIONS_WITH_VALUES:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    if "--help" in argv or "-h" in argv:
        return None
    command = words[0] if words else "app"
    headless = "--headless" in argv
    if command == "app" or (command in APP_COMMANDS and not headless):
        return STARTING_APP, True
    if command == "runs" and words[1:2] != ["fork"]:
        return None
    if command in HEADLESS_COMMANDS:
        return f"workbench {' '.join(words[:2])}: starting…", False
    return None


def main() -> None:
    note = starting_note(sys.argv[1:]) if sys.stdout.isatty() else None
    if note is not None:
        sys.stdout.write(note[0] + "\n")
        sys.stdout.flush()
    try:
        from tui.cli import main as run_cli
    except KeyboardInterrupt:
        print(INTERRUPTED_LINE, file=sys.stderr)
        sys.exit(INTERRUPTED)
    except ImportError as error:
        print(
            f"error: the installation is incomplete ({error}) — reinstall it "
            "(make .venv/.installed, or pip install -c constraints.txt -e .)",
            file=sys.stderr,
        )
        sys.exit(INTERNAL)
    try:
        run_cli()
    except SystemExit as done:
        if note is not None and note[1] and done.code in (0, None):
            sys.stdout.write(ERASE_LINE)
            sys.stdout.flush()
        raise
