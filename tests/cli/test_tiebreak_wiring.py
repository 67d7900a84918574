"""`workbench run` of a workflow whose steps are all built in but whose routing asks the model
to break a tie: the run gets the application's router, so the tie-breaker is consulted."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflows import WORKFLOWS_DIR

from .test_engine_cli import workbench

pytestmark = pytest.mark.timeout(300)


def test_a_model_backed_tie_breaker_is_consulted_by_workbench_run(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("router:\n  providers: []\n")  # the built-in provider answers alone
    done = workbench(
        tmp_path,
        "--config",
        str(config),
        "run",
        str(WORKFLOWS_DIR / "demo_tiebreak.yaml"),
        "--headless",
        "--on-interrupt",
        "default",
    )

    assert done.returncode == 0, done.stderr
    assert "no tie-breaker is configured" not in done.stdout
    assert "The model suggests" in done.stdout
