"""`workbench resume --answer` claims the run and records its answers in one transaction: while
another live process owns the WAITING run (it won the race and is about to drive it), a second
resume is refused in one line and stores nothing — its answer can never mix with the winner's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.store import RunStore
from workflows import WORKFLOWS_DIR

from .test_engine_cli import REPO, workbench

pytestmark = pytest.mark.timeout(300)

OWNER = """
import sys
from pathlib import Path
from engine.store import RunStore
store = RunStore(Path(sys.argv[1]))
store.claim_owner(sys.argv[2])
print("claimed", flush=True)
sys.stdin.readline()
store.close()
"""


def test_a_resume_refused_by_the_runs_owner_stores_no_answer(tmp_path: Path) -> None:
    waiting = workbench(
        tmp_path,
        "run",
        str(WORKFLOWS_DIR / "approval.yaml"),
        "--headless",
        "--on-interrupt",
        "wait",
    )
    assert waiting.returncode == 4, waiting.stderr
    db = tmp_path / "runs.sqlite"
    with RunStore(db) as store:
        run_id = store.list_runs()[0].run_id
        (pending,) = store.pending_interrupts(run_id)

    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(db), run_id],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owner.stdout is not None and owner.stdout.readline().strip() == "claimed"
        refused = workbench(tmp_path, "resume", run_id, "--answer", "reject")
    finally:
        owner.communicate("\n", timeout=60)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    line = refused.stderr.strip()
    assert line.startswith(f"error: run {run_id} is running in another process (pid {owner.pid} ")
    assert line.endswith("not resuming it twice")
    assert len(refused.stderr.strip().splitlines()) == 1
    with RunStore(db) as store:
        stored = store.get_interrupt(pending.interrupt_id)
        assert stored is not None and stored.answer is None and stored.status == "pending"
        assert store.get_run(run_id).status.value == "WAITING"

    resumed = workbench(tmp_path, "resume", run_id, "--answer", "approve")
    assert resumed.returncode == 0, resumed.stderr
    assert "plan answered: approve" in resumed.stdout
