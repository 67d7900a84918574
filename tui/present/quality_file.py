"""A research run's quality.yaml as the app and the command line show it.

The file is outside text like any other: it is read under plumbing's YAML limits, and a file
that is refused or broken becomes ``{"error": "<file>:<line>: what is wrong"}`` — one line the
report screen and ``workbench research`` both show in place of the metadata.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from plumbing.yaml_reading import MAX_BYTES, YamlLimitError, load_yaml, read_bounded


def read_quality(path: Path) -> dict[str, Any]:
    """The metadata in ``path``; ``{}`` when there is none, ``{"error": …}`` when it cannot be read."""
    try:
        loaded = load_yaml(read_bounded(path, MAX_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        return {"error": f"{path}: cannot be read ({exc.strerror or exc})"}
    except UnicodeDecodeError:
        return {"error": f"{path}: not UTF-8 text"}
    except YamlLimitError as refused:
        return {"error": refused.located(str(path))}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return {"error": f"{path}:{mark.line + 1 if mark else 1}: not valid YAML"}
    return loaded if isinstance(loaded, dict) else {}
