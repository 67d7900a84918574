"""Where the workbench's folders are when none is named: the workspace and the config file.

Only paths, at the bottom of the app's layers: the workspace's own files are named by
:class:`tui.launch.workspace.Workspace`, and nothing here reads a file.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_config_dir, user_data_dir

from plumbing.app_dirs import APP_NAME
from tui.root_options import CONFIG_ENV


def default_root() -> Path:
    """The workspace folder when none is given: the platform's user data dir (not created here)."""
    return Path(user_data_dir(APP_NAME))


def standard_config_path() -> Path:
    """``$WORKBENCH_CONFIG`` if set, else ``<user config dir>/config.yaml``."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override).expanduser()
    return Path(user_config_dir(APP_NAME)) / "config.yaml"
