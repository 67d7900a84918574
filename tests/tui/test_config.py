from __future__ import annotations

from pathlib import Path

import pytest

from tui.app import WorkbenchApp
from tui.commands.app_cmds import make_workbench
from tui.config import ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_missing_file_means_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path / "absent.yaml")
    assert config.theme == "textual-dark" and config.keymap == {}


def test_valid_file(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "theme: nord\nkeymap:\n  run.toggle_outline: t\ncorpus:\n  folders: [~/docs]\n"))
    assert config.theme == "nord"
    assert config.keymap == {"run.toggle_outline": "t"}
    assert config.corpus.folders == ["~/docs"]


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("theme: nord\nkeymap:\n  run.report: [r\n", 3, "YAML"),
        ("theme: nord\n\ncolour: red\n", 3, "colour"),
        ("theme: nord\ncorpus:\n  folders: 7\n", 3, "corpus.folders"),
        ("- just\n- a list\n", 1, "mapping"),
        ("keymap:\n  app.help: ''\n", 2, "keymap.app.help"),
    ],
)
def test_mistakes_are_one_line_with_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}:")
    assert words in message


async def test_app_shows_config_error_and_runs_on_defaults(tmp_path: Path, workspace: Path) -> None:
    path = write(tmp_path, "theme: nord\nbogus_section: 1\n")
    workbench = make_workbench(workspace, path)
    workbench.shipped_dir = workspace / "shipped"
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        messages = [n.message for n in app._notifications]
        assert any(m.startswith(f"{path}:2: bogus_section") for m in messages), messages
        assert app.theme == "textual-dark"


async def test_keymap_from_config_rebinds_by_id(workbench, tmp_path: Path) -> None:
    workbench.config = load_config(write(tmp_path, "keymap:\n  run.toggle_outline: t\n"))
    app = WorkbenchApp(workbench)
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.pause()
        screen = app.open_run("run-done")
        await pilot.pause()
        assert screen.query_one("#graph").current == "dag"
        await pilot.press("o")
        assert screen.query_one("#graph").current == "dag"
        await pilot.press("t")
        await pilot.pause()
        assert screen.query_one("#graph").current == "outline"
