"""The ``workbench`` executable's first code: Ctrl-C while Python still imports is one line too.

It imports nothing at the top but the exit codes (a module of constants) — everything the
command needs, click included, is imported inside the guard — so no traceback can come from
start-up. The rest of the boundary (every
failure of a running command) is :mod:`tui.failures`.
"""

import sys

from tui.exit_codes import INTERNAL, INTERRUPTED, INTERRUPTED_LINE


def main() -> None:
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
    run_cli()
