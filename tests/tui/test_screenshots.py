"""``make screenshots`` writes the same files on every run: stored times come from a fixed
clock and each picture is taken once the screen has stopped changing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.dev.screenshots import SCENES, take

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize("name", ["run", "provider_detail"])
async def test_two_runs_write_identical_screenshots(tmp_path: Path, name: str) -> None:
    scene, size = SCENES[name]
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = await take(name, scene, size, tmp_path / "first")
    second = await take(name, scene, size, tmp_path / "second")
    assert first.read_bytes() == second.read_bytes()
    assert b"intake_scope" in first.read_bytes()
