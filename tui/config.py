"""The workbench's one configuration file, and the one way to find and load it.

Which file: the root ``--config PATH`` option of ``workbench``, else
``$WORKBENCH_CONFIG``, else ``config.yaml`` in the platformdirs user config dir
(``~/.config/research-workbench/config.yaml`` on Linux). Sections: ``theme``,
``keymap`` (binding id -> keys, as Textual's keymaps), ``corpus.folders``
(indexed into the workspace corpus and searched by runs), ``workflow_dirs``,
``router`` (a typed :class:`router.config.RouterConfig`: providers, profiles,
policy) and ``store`` (a PostgreSQL address: runs, provider statistics and
checkpoints in that database instead of the workspace's SQLite files). A mistake in the file never becomes a traceback: :func:`load_config`
raises :class:`ConfigError`, one line naming the file, the line, the key and
what to do; on the command line it prints as ``error: …`` and exits 2.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import click
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from plumbing.yaml_reading import (
    MAX_BYTES,
    LimitedLoader,
    NotARegularFile,
    YamlLimitError,
    load_yaml,
    read_bounded,
)
from research.corpus_limits import DEFAULT_LIMITS, MIB, CorpusLimits
from router.config import RouterConfig, effective_router_config
from tui.echo import echo
from tui.exit_codes import BAD_INPUT
from tui.paths import standard_config_path
from tui.root_options import CONFIG_ENV, CONFIG_PATH_KEY, CONFIG_REQUIRED_KEY

SECRET_KEYS = frozenset({"api_key", "key", "token", "password", "secret"})


Keys = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
"""Comma-separated key names, as in Textual bindings (``ctrl+o,f6``)."""


class ConfigError(click.ClickException):
    """A config file that cannot be used; ``str()`` is one line for the person.

    On the command line it is shown as ``error: <line>`` on stderr with exit code 2.
    """

    exit_code = BAD_INPUT

    def show(self, file: Any = None) -> None:
        echo(f"error: {self.message}", err=True)


class CorpusConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    folders: list[str] = Field(default_factory=list)
    """Folders of md/rst/txt/html/pdf indexed into the workspace corpus (absolute or ``~/`` paths)."""
    max_document_mb: float = Field(default=DEFAULT_LIMITS.max_document_bytes / MIB, gt=0)
    """The largest document indexed (its file, and its text), in MiB; a larger one is skipped."""
    max_pdf_pages: int = Field(default=DEFAULT_LIMITS.max_pdf_pages, ge=1)
    """The most pages of a PDF read; a longer PDF is skipped."""
    follow_symlinks: bool = False
    """Whether a symlink in a corpus folder pointing outside it is followed (else skipped, listed)."""

    def limits(self) -> CorpusLimits:
        """The bounds every corpus document is read within (research/corpus_limits.py)."""
        return replace(
            DEFAULT_LIMITS,
            max_document_bytes=int(self.max_document_mb * MIB),
            max_pdf_pages=self.max_pdf_pages,
            follow_symlinks=self.follow_symlinks,
        )


class WorkbenchConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    theme: str = "textual-dark"
    keymap: dict[str, Keys] = Field(default_factory=dict)
    """Binding id (``run.toggle_outline``, ``app.palette``...) -> comma-separated keys."""
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    router: RouterConfig = Field(default_factory=RouterConfig)
    """Providers, profiles and policy of the SmartModelRouter (router/config.py)."""
    workflow_dirs: list[str] = Field(default_factory=list)
    """Extra folders holding the user's workflow YAML files."""
    store: str | None = None
    """A PostgreSQL address (``postgresql://USER@HOST:PORT/DATABASE``) holding the runs, the
    provider statistics and the checkpoints; None: the workspace's SQLite files. Its password
    comes from ``PGPASSWORD`` or ``~/.pgpass``, never from this file."""
    _source: str = PrivateAttr(default="")

    @model_validator(mode="before")
    @classmethod
    def _empty_sections_are_defaults(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            return {key: value for key, value in data.items() if value is not None}
        return data

    @field_validator("store")
    @classmethod
    def _a_database_without_its_password(cls, value: str | None) -> str | None:
        if value is None:
            return None
        from plumbing.postgres import Database, DatabaseError, is_database_address

        if not is_database_address(value):
            raise ValueError(
                "is not a PostgreSQL address; write postgresql://USER@HOST:PORT/DATABASE, or"
                " leave it out to keep runs in the workspace"
            )
        try:
            database = Database(value)
        except DatabaseError as error:
            raise ValueError(str(error)) from None
        if database.has_password:
            raise ValueError(
                "holds a password, and secrets never go in the config file; take it out and"
                " export it in PGPASSWORD (or write it in ~/.pgpass)"
            )
        return value

    @property
    def source(self) -> str:
        """The file this config was read from (empty for the built-in defaults)."""
        return self._source

    def effective_router(self, environ: Mapping[str, str]) -> RouterConfig:
        """The file's providers when it lists any, else the environment's, with the file's profiles and policy."""
        return effective_router_config(self.router, environ)


# -- which file ------------------------------------------------------------------------------


def _root_obj(ctx: click.Context | None) -> dict[str, Any]:
    if ctx is None:
        return {}
    obj = ctx.find_root().obj
    return obj if isinstance(obj, dict) else {}


def config_path_for(ctx: click.Context | None) -> Path:
    """The file a ``workbench`` command reads: its root ``--config``, else :func:`standard_config_path`."""
    configured = _root_obj(ctx).get(CONFIG_PATH_KEY)
    return Path(configured).expanduser() if configured else standard_config_path()


def config_required(ctx: click.Context | None) -> bool:
    """True when the file was named with ``--config``: then it must exist."""
    return bool(_root_obj(ctx).get(CONFIG_REQUIRED_KEY))


def default_config_path() -> Path:
    """The config file of the ``workbench`` command running in this thread, else :func:`standard_config_path`."""
    return config_path_for(click.get_current_context(silent=True))


# -- parsing ---------------------------------------------------------------------------------


class _LineLoader(LimitedLoader):
    """A YAML loader that remembers the line of every mapping key (under the limits of every
    YAML file the product reads: plumbing/yaml_reading.py)."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    mapping = loader.construct_mapping(node, deep=True)
    lines = {
        key_node.value: key_node.start_mark.line + 1
        for key_node, _ in node.value
        if isinstance(key_node, yaml.ScalarNode)
    }
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
            if isinstance(node, _LinedDict) and node.lines:
                line = min(node.lines.values())
        else:
            break
    return line


def _data_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """``loc`` without pydantic's validator and dict-key markers: the path of keys in the file."""
    return tuple(
        part
        for part in loc
        if not (
            isinstance(part, str)
            and (part == "[key]" or part.startswith(("function-", "literal[")))
        )
    )


def _key_path(loc: tuple[int | str, ...]) -> str:
    """``router.providers[0].kind`` for ``("router", "providers", 0, "kind")``."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path or "(top level)"


def _advice(error: ErrorDetails, loc: tuple[int | str, ...]) -> str:
    """What is wrong and what to do — never the offending value, which might be a pasted key.

    The router's own checks (``value_error``) already say what to do.
    """
    if error["type"] == "extra_forbidden":
        if loc and loc[-1] in SECRET_KEYS:
            return (
                "keys never go in the config file; export the key in an environment variable "
                "and name that variable in api_key_env"
            )
        return "unknown key; remove it or check its spelling"
    if error["type"] == "missing":
        return "is required; add it"
    if error["type"] == "value_error":
        return str(error["msg"]).removeprefix("Value error, ")
    return f"{error['msg']}; correct it"


def _validation_problem(exc: ValidationError, data: Any, source: str) -> ConfigError:
    errors = exc.errors(include_input=False, include_url=False)
    loc = _data_loc(tuple(errors[0]["loc"]))
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    text = f"{source}:{_line_of(data, loc)}: {_key_path(loc)}: {_advice(errors[0], loc)}{more}"
    return ConfigError(" ".join(text.split()))


def parse_config(text: str, source: str) -> WorkbenchConfig:
    try:
        data = load_yaml(text, _LineLoader)
    except YamlLimitError as refused:
        raise ConfigError(refused.located(source)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ConfigError(f"{source}:{line}: {problem}; fix the YAML syntax there") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}:1: the file must be a mapping of sections (theme, keymap, corpus, router)"
        )
    try:
        config = WorkbenchConfig.model_validate(data)
    except ValidationError as exc:
        raise _validation_problem(exc, data, source) from None
    config._source = source
    return config


def load_config(path: Path | None = None, *, must_exist: bool = False) -> WorkbenchConfig:
    """Read the config file (:func:`default_config_path` when None); a missing file means the defaults."""
    path = path or default_config_path()
    try:
        text = read_bounded(path, MAX_BYTES).decode("utf-8")
    except YamlLimitError as refused:
        raise ConfigError(refused.located(str(path))) from None
    except NotARegularFile as refused:
        raise ConfigError(f"{path}: {refused} with --config or {CONFIG_ENV}") from None
    except FileNotFoundError:
        if must_exist:
            raise ConfigError(f"{path}: no such config file; check the --config path") from None
        return WorkbenchConfig()
    except IsADirectoryError:
        raise ConfigError(
            f"{path}: is a folder, not a config file; name a YAML file with --config or "
            f"{CONFIG_ENV}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(
            f"{path}:1: cannot read the config file ({exc.__class__.__name__}); "
            "check its permissions and encoding"
        ) from None
    return parse_config(text, str(path))


def config_from_context(ctx: click.Context | None) -> WorkbenchConfig:
    """The config of a ``workbench`` command: its ``--config`` / ``$WORKBENCH_CONFIG`` / default file."""
    return load_config(config_path_for(ctx), must_exist=config_required(ctx))


def active_config() -> WorkbenchConfig:
    """The config of the ``workbench`` command running in this thread; outside one, the standard file's."""
    return config_from_context(click.get_current_context(silent=True))
