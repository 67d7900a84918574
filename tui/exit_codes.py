"""Every exit code of the ``workbench`` executable, in one module that imports nothing, so the
executable's first code (tui/entry.py) and its error boundary (tui/failures.py) share them."""

COMPLETED = 0
"""Exit code of a run that COMPLETED (and of any command that did what it was asked)."""
FAILED = 1
"""Exit code of a run that FAILED, and of a check that found a problem: a registry that does not
validate, a provider check that failed, ``runs copy`` leaving runs that differ."""
BAD_INPUT = 2
"""Exit code of bad input: one line on stderr, never a traceback."""
PARTIAL = 3
"""Exit code of a PARTIAL run (a limit was hit or the completion criteria were not met)."""
WAITING = 4
"""Exit code of a run stored WAITING: a prompt waits for ``workbench resume``."""
CANCELLED = 5
"""Exit code of a CANCELLED run, and of Ctrl-C while a run's steps run."""
SHADOW_DIFFERS = 6
"""Exit code of ``run --engine shadow`` when the two engines' canonical results differ."""
WORKER_HUNG = 7
"""Exit code of ``workbench worker`` when its orderly stop overran its shutdown time and the
process ended itself (its runs are taken over by the other workers)."""
INTERNAL = 70
"""Exit code of an unexpected failure: a bug, or an installation missing its own dependencies."""
INTERRUPTED = 130
"""Exit code of Ctrl-C before a command started its work (128 + SIGINT, as shells report it)."""
INTERRUPTED_LINE = (
    "error: interrupted (Ctrl-C) — nothing more was done; what was already stored is kept"
)
"""What Ctrl-C before a command started its work prints, with :data:`INTERRUPTED`."""
