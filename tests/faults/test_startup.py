"""Start-up faults: a config that cannot be used, and Ctrl-C while the executable still starts.

A bad config never stops the app (it starts on the defaults) and never troubles a command that
does not read it; a command that needs it prints the one line, exit 2.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.faults.processes import Outcome, finish, outcome, spawn, spawn_app
from tests.faults.test_matrix import assert_no_traceback, assert_one_line
from tests.faults.workspace import Template, copy_template, state
from workflows import WORKFLOWS_DIR

DEEP = 3000
"""Nesting levels of the hostile config: past Python's recursion limit."""


def bad_config(tmp_path: Path, kind: str) -> Path:
    if kind == "folder":
        path = tmp_path / "config-folder"
        path.mkdir()
    elif kind == "binary":
        path = tmp_path / "config.yaml"
        path.write_bytes(bytes(range(256)) * 8)
    else:
        path = tmp_path / "config.yaml"
        path.write_text("theme: " + "[" * DEEP + "]" * DEEP + "\n", encoding="utf-8")
    return path


KINDS = ["folder", "binary", "deep"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_config_is_one_line_where_it_is_read_and_nowhere_else(
    kind: str, template: Template, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = bad_config(tmp_path, kind)
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    workspace = copy_template(template, tmp_path / "ws")
    line = assert_one_line(outcome(workspace, ["providers"]), str(config))
    assert line.startswith(f"error: {config}")
    # the config says where the runs are (its store:), so the runs commands read it too
    listed = assert_one_line(outcome(workspace, ["runs", "list"]), str(config))
    assert listed == line
    checked = outcome(workspace, ["validate", str(WORKFLOWS_DIR / "fan_out.yaml")])
    assert (checked.code, checked.stderr) == (0, "")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", KINDS)
def test_the_app_starts_on_the_defaults_with_a_bad_config(
    kind: str, template: Template, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = bad_config(tmp_path, kind)
    monkeypatch.setenv("WORKBENCH_CONFIG", str(config))
    term = spawn_app(copy_template(template, tmp_path / "ws"), ["app"])
    try:
        term.wait_for("Workflows")
        term.quit()
        term.child.close()
        assert term.child.exitstatus == 0
    finally:
        term.close()


def _loaded(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.timeout(600)
def test_ctrl_c_while_starting_is_one_line(template: Template, tmp_path: Path) -> None:
    """SIGINT once the executable has begun importing (its SQLite module is mapped): one line,
    exit 130 — or, should the signal land once the run is stored, the run's own interrupted
    message and exit 5. Never a traceback."""
    workspace = copy_template(template, tmp_path / "ws")
    held = template.held_workflow
    process = spawn(workspace, ["run", str(held), "--headless", "--on-interrupt", "ask"])
    for _ in range(6000):
        if _loaded(process.pid, "_sqlite3") or process.poll() is not None:
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGINT)
    done: Outcome = finish(process)
    assert_no_traceback(done)
    if done.code == 130:
        assert done.error_lines == [
            "error: interrupted (Ctrl-C) — nothing more was done; what was already stored is kept"
        ]
    else:
        assert done.code == 5, done
        assert "interrupted: the run is stored" in done.stdout
    assert set(state(workspace).integrity.values()) == {"ok"}
