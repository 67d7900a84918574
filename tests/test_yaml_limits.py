"""One set of limits for every YAML file the product reads (plumbing/yaml_reading.py).

The same hostile documents go to every reader — a workflow, an agent-registry file, the config
file, the router's config, a fault script, a run's quality.yaml (on the report screen and in
``workbench research``'s summary) — and each refuses them the same way: nesting deeper than 40
levels and aliases at their line and column, a file over 1 MB (4 MB for a workflow) before it is
parsed; one line, never a traceback.
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from agents.registry_loader import load_registry, load_registry_text
from engine.errors import WorkflowLoadError
from engine.loader import load_workflow, load_workflow_text
from plumbing.yaml_reading import (
    MAX_BYTES,
    MAX_DEPTH,
    WORKFLOW_MAX_BYTES,
    YamlDuplicateKey,
    YamlLimitError,
    load_yaml,
)
from router.config import ConfigError, load_router_config
from router.fault.script import FaultScriptError, load_fault_script
from tui.app.run_state import RunView
from tui.app.screens.report import load_report
from tui.commands.research_cmds import research_summary
from tui.config import ConfigError as AppConfigError
from tui.config import load_config, parse_config
from tui.present.quality_file import read_quality

DEEP = "a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n"  # the mapping, then 40 lists: 41 levels
"""Its 41st level (the 40th list) opens at line 1, column 4 + 39 = 43."""
ALIASES = "a: &name [1, 2]\nb: *name\n"
"""The alias is at line 2, column 4."""


def one_line(call: Callable[[], object]) -> str:
    """The one line ``call`` refuses its input with (a registry reports, the others raise)."""
    try:
        result = call()
    except (WorkflowLoadError, ConfigError, AppConfigError, FaultScriptError) as error:
        message = str(error)
    else:
        message = str(result)
    assert "\n" not in message and "Traceback" not in message
    return message


def refusal(read: Callable[[str, Path], object], text: str, tmp_path: Path) -> str:
    """The one line ``read`` refuses ``text`` with."""
    return one_line(lambda: read(text, tmp_path))


def workflow(text: str, tmp_path: Path) -> object:
    return load_workflow_text(text, source="w.yaml")


def registry(text: str, tmp_path: Path) -> object:
    problems = load_registry_text(text, "r.yaml", []).problems
    assert len(problems) == 1
    return problems[0]


def app_config(text: str, tmp_path: Path) -> object:
    return parse_config(text, "config.yaml")


def router_config(text: str, tmp_path: Path) -> object:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return load_router_config(path)


def fault_script(text: str, tmp_path: Path) -> object:
    path = tmp_path / "chaos.yaml"
    path.write_text(text, encoding="utf-8")
    return load_fault_script(path)


def quality(text: str, tmp_path: Path) -> object:
    (tmp_path / "quality.yaml").write_text(text, encoding="utf-8")
    _, shown = load_report(tmp_path, RunView())
    return shown["error"]


def summary(text: str, tmp_path: Path) -> object:
    (tmp_path / "report.md").write_text("# Report\n", encoding="utf-8")
    (tmp_path / "quality.yaml").write_text(text, encoding="utf-8")
    return research_summary(tmp_path)[0]


READERS = [workflow, registry, app_config, router_config, fault_script, quality, summary]


@pytest.mark.parametrize("read", READERS)
def test_nesting_past_the_limit_is_refused_where_it_happens(
    read: Callable[[str, Path], object], tmp_path: Path
) -> None:
    message = refusal(read, DEEP, tmp_path)
    assert f"{MAX_DEPTH} levels deep" in message
    assert ":1:43:" in message


@pytest.mark.parametrize("read", READERS)
def test_an_alias_is_refused_where_it_stands(
    read: Callable[[str, Path], object], tmp_path: Path
) -> None:
    message = refusal(read, ALIASES, tmp_path)
    assert "aliases (*name) are not supported" in message
    assert "2:4" in message


@pytest.mark.parametrize("read", [r for r in READERS if r is not workflow])
def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    read: Callable[[str, Path], object], tmp_path: Path
) -> None:
    message = refusal(read, "#" * (MAX_BYTES + 1), tmp_path)
    assert f"the limit is {MAX_BYTES:,}" in message


def test_the_limits_hold_exactly_at_their_bounds() -> None:
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(YamlLimitError) as deep:
        load_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert (deep.value.line, deep.value.column) == (1, MAX_DEPTH + 1)
    assert load_yaml("#" * MAX_BYTES) is None
    with pytest.raises(YamlLimitError):
        load_yaml("#" * (MAX_BYTES + 1))


def config_file(path: Path) -> object:
    return load_config(path)


def router_config_file(path: Path) -> object:
    return load_router_config(path)


def fault_script_file(path: Path) -> object:
    return load_fault_script(path)


def workflow_file(path: Path) -> object:
    return load_workflow(path)


def quality_file(path: Path) -> object:
    return read_quality(path)["error"]


def registry_file(path: Path) -> object:
    problems = load_registry([], [], files=[path]).problems
    assert len(problems) == 1
    return problems[0]


FILE_READERS = [
    config_file,
    router_config_file,
    fault_script_file,
    workflow_file,
    quality_file,
    registry_file,
]


def file_refusal(read: Callable[[Path], object], path: Path) -> str:
    """The one line ``read`` refuses the file at ``path`` with."""
    return one_line(lambda: read(path))


@pytest.mark.parametrize("read", FILE_READERS)
def test_a_file_that_never_ends_is_refused_unread(
    read: Callable[[Path], object], tmp_path: Path
) -> None:
    """A FIFO would wait for a writer for ever, ``/dev/zero`` never end (the memory it filled was
    the bound): neither is a file to read."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    endless = tmp_path / "endless.yaml"
    endless.symlink_to("/dev/zero")
    for path in (fifo, endless):
        message = file_refusal(read, path)
        assert message.startswith(str(path)) and "not a regular file" in message, message


@pytest.mark.parametrize("read", FILE_READERS)
def test_a_file_past_its_bound_is_read_no_further_than_the_bound(
    read: Callable[[Path], object], tmp_path: Path
) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as file:
        file.truncate(3 * 1024**3)  # 3 GiB, sparse: costs no disk, only the reading
    tracemalloc.start()
    try:
        message = file_refusal(read, huge)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "3,221,225,472 bytes" in message or "3221.2 MB" in message, message
    assert peak < 2 * WORKFLOW_MAX_BYTES, f"refusing it read {peak:,} bytes"


def test_keys_are_the_same_when_yaml_reads_them_the_same() -> None:
    """A key written twice is refused as YAML reads it, not as it is spelled: ``yes`` and
    ``true`` are one key (the first was dropped unseen), ``1`` and ``"1"`` are two."""
    assert load_yaml('{1: a, "1": b}') == {1: "a", "1": "b"}
    with pytest.raises(YamlDuplicateKey, match="duplicate key 'true' .first written at line 1."):
        load_yaml("{yes: a, true: b}")
