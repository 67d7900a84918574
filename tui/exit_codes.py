"""Every exit code of the ``workbench`` executable, in one module that imports nothing, so the
executable's first code (tui/entry.py) and its error boundary (tui/failures.py) share them."""

BAD_INPUT = 2
"""Exit code of bad input: one line on stderr, never a traceback."""
INTERNAL = 70
"""Exit code of an unexpected failure: a bug, or an installation missing its own dependencies."""
INTERRUPTED = 130
"""Exit code of Ctrl-C before a command started its work (128 + SIGINT, as shells report it)."""
INTERRUPTED_LINE = (
    "error: interrupted (Ctrl-C) — nothing more was done; what was already stored is kept"
)
"""What Ctrl-C before a command started its work prints, with :data:`INTERRUPTED`."""
