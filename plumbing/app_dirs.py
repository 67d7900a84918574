"""The workbench's name among the platform's user folders, and its cache folder.

The app names the workspace and config folders (tui/paths.py); research keeps what it can
compute again — the sentence encoder's vectors — in the user cache dir, found here so that
both spell the folder one way.
"""

from __future__ import annotations

from pathlib import Path

from platformdirs import user_cache_dir

APP_NAME = "research-workbench"
"""The name of the workbench's folders in the platform's user data, config and cache dirs."""


def cache_folder() -> Path:
    """The user cache dir's folder of the workbench (``$XDG_CACHE_HOME/research-workbench`` on
    Linux), read when called, so a changed ``XDG_CACHE_HOME`` counts; not created here."""
    return Path(user_cache_dir(APP_NAME, appauthor=False))
