"""What the root `workbench` command hands its subcommands, kept import-light so that
`workbench --help` loads nothing else: the keys of the click context's ``obj`` (the exit codes
are tui/exit_codes.py's)."""

from __future__ import annotations

WORKSPACE_KEY = "workspace"
"""Key of the root click context's ``obj`` holding ``--workspace`` (or ``$WORKBENCH_HOME``)."""
CONFIG_ENV = "WORKBENCH_CONFIG"
CONFIG_PATH_KEY = "config_path"
"""Key of the root click context's ``obj`` holding ``--config`` (or ``$WORKBENCH_CONFIG``)."""
CONFIG_REQUIRED_KEY = "config_required"
"""True in ``obj`` when ``--config`` was typed on the command line: then the file must exist."""
SERVER_ENV = "WORKBENCH_SERVER"
SERVER_KEY = "server"
"""Key of the root click context's ``obj`` holding ``--server`` (or ``$WORKBENCH_SERVER``): the
`workbench server` whose runs the app shows, or None for this machine's store."""
