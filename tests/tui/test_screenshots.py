"""``make screenshots`` writes the same files on every run: stored times come from a fixed
clock, each scene waits for what it shows (never for a fixed time) and each picture is taken
once the screen has stopped changing.

The provider-detail scene once came out different under heavy load: its scene slept a fixed
0.2 s, and when the run screen mounted later than that, the screen's own focus on the graph
landed after the scene's focus on the providers panel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools.screenshots import SCENES, take

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("run", "intake_scope"),
        ("step_detail", "640 in / 280 out tokens"),
        ("provider_detail", "tripped by rate_limit, HTTP 429"),
        ("approval", "Approve"),
    ],
)
async def test_two_runs_write_identical_screenshots(tmp_path: Path, name: str, shown: str) -> None:
    scene, size = SCENES[name]
    (tmp_path / "first").mkdir()
    (tmp_path / "second").mkdir()
    first = await take(name, scene, size, tmp_path / "first")
    second = await take(name, scene, size, tmp_path / "second")
    assert first.read_bytes() == second.read_bytes()
    assert shown.replace(" ", "&#160;").encode() in first.read_bytes()
