"""The workbench's own configuration: ``config.yaml`` in the platformdirs config dir.

Sections: ``theme``, ``keymap`` (binding id -> keys, as Textual's keymaps),
``corpus`` (folders to index) and ``router`` (handed to ``router.config`` when
that module is present). A mistake in the file never becomes a traceback:
:func:`load_config` raises :class:`ConfigError` whose message is one line
naming the file, the line and what to do, and the app falls back to defaults.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Annotated, Any

import yaml
from platformdirs import user_config_dir
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

APP_NAME = "research-workbench"
CONFIG_ENV = "WORKBENCH_CONFIG"


Keys = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""Comma-separated key names, as in Textual bindings (``ctrl+o,f6``)."""


class ConfigError(Exception):
    """A config file that cannot be used; ``str()`` is one line for the person."""


class CorpusConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    folders: list[str] = Field(default_factory=list)


class WorkbenchConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    theme: str = "textual-dark"
    keymap: dict[str, Keys] = Field(default_factory=dict)
    """Binding id (``run.toggle_outline``, ``app.palette``...) -> comma-separated keys."""
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    router: dict[str, Any] = Field(default_factory=dict)
    """Validated by router/config.py's RouterConfig when that module exists."""
    workflow_dirs: list[str] = Field(default_factory=list)
    """Extra folders holding the user's workflow YAML files."""


def default_config_path() -> Path:
    """``$WORKBENCH_CONFIG`` if set, else ``<user config dir>/config.yaml``."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    return Path(user_config_dir(APP_NAME)) / "config.yaml"


class _LineLoader(yaml.SafeLoader):
    """A YAML loader that remembers the line of every mapping key."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    lines = {key_node.value: key_node.start_mark.line + 1 for key_node, _ in node.value
             if isinstance(key_node, yaml.ScalarNode)}
    return _LinedDict(mapping, lines)


class _LinedDict(dict):  # type: ignore[type-arg]
    """A dict that also knows the source line of each of its keys."""

    def __init__(self, data: dict[Any, Any], lines: dict[Any, int]) -> None:
        super().__init__(data)
        self.lines = lines


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _line_of(data: Any, loc: tuple[int | str, ...]) -> int:
    """The line of the deepest key of ``loc`` found in ``data`` (1 when nothing matches)."""
    line = 1
    node = data
    for part in loc:
        if isinstance(node, _LinedDict) and part in node:
            line = node.lines.get(part, line)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        else:
            break
    return line


def _router_check(section: dict[str, Any]) -> None:
    """Validate the router section with router/config.py's model, when it exists."""
    if not section:
        return
    try:
        module = importlib.import_module("router.config")
    except ModuleNotFoundError:
        return
    model = getattr(module, "RouterConfig", None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        model.model_validate(section)


def parse_config(text: str, source: str) -> WorkbenchConfig:
    try:
        data = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{source}:{line}: {problem}; fix the YAML syntax there") from None
    if data is None:
        return WorkbenchConfig()
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the file must be a mapping of sections (theme, keymap, corpus, router)")
    try:
        config = WorkbenchConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        where = ".".join(str(p) for p in loc) or "(top level)"
        hint = "remove it" if first["type"] == "extra_forbidden" else "correct it"
        raise ConfigError(
            f"{source}:{_line_of(data, loc)}: {where}: {first['msg']}; {hint}"
        ) from None
    try:
        _router_check(config.router)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ("router", *first["loc"])
        where = ".".join(str(p) for p in loc)
        raise ConfigError(f"{source}:{_line_of(data, loc)}: {where}: {first['msg']}; correct it") from None
    return config


def load_config(path: Path | None = None) -> WorkbenchConfig:
    """Read the config file; a missing file means the defaults."""
    path = path or default_config_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return WorkbenchConfig()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}:1: cannot read the config file ({exc.__class__.__name__}); check its permissions and encoding") from None
    return parse_config(text, str(path))
