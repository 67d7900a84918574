"""``make screenshots`` writes the same files on every run: stored times come from a fixed
clock and each picture is taken once the screen has stopped changing.

The run scene and the step detail (its model call journaled with fixed figures) are checked:
the provider-detail scene (its facts refresh on a timer) came out different once under heavy load (two suites side by side), so its picture still depends on
timing there and is not claimed to be reproducible."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.dev.screenshots import SCENES, take

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize(
    ("name", "shown"), [("run", "intake_scope"), ("step_detail", "640 in / 280 out tokens")]
)
async def test_two_runs_write_identical_screenshots(tmp_path: Path, name: str, shown: str) -> None:
    scene, size = SCENES[name]
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = await take(name, scene, size, tmp_path / "first")
    second = await take(name, scene, size, tmp_path / "second")
    assert first.read_bytes() == second.read_bytes()
    assert shown.replace(" ", "&#160;").encode() in first.read_bytes()
