"""`workbench --server URL run FILE --headless` against a real server process and a real
worker: the run is sent to the server, run by the worker, printed here as a local headless run
is, its prompts answered from here or left waiting, with the local exit codes; and `workbench
--server URL resume RUN --answer …` continuing a waiting one from where it stopped."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from engine.states import RunStatus
from engine.store.postgres import PostgresRunStore
from tests.server.serving import ServerProcess, server_env, workbench_on
from tests.worker.workers import DEADLINE_S, PATIENT, workers
from tui import exit_codes
from workflows import WORKFLOWS_DIR

RUN_LINE = re.compile(r"^run (\S+): (\w+)", re.MULTILINE)


def test_a_run_sent_to_a_server_is_followed_here_answered_or_left_waiting(
    server: ServerProcess, pg_database: str, tmp_path: Path
) -> None:
    env = server_env(tmp_path / "client-home", tmp_path / "none.yaml")
    approval = str(WORKFLOWS_DIR / "approval.yaml")

    workbench = workbench_on(server.url, env, DEADLINE_S)

    def run_here(*options: str) -> subprocess.CompletedProcess[str]:
        return workbench("run", approval, "-i", "topic=x", *options)

    with workers(pg_database, tmp_path, 1, *PATIENT):
        waited = run_here("--headless", "--on-interrupt", "wait")
        answered = run_here("--headless", "--on-interrupt", "default")
        left = RUN_LINE.search(waited.stdout)
        assert left is not None, waited.stdout + waited.stderr
        shown = workbench("runs", "show", left.group(1))
        resumed = workbench("resume", left.group(1), "--answer", "plan=reject")
        finished_already = workbench("resume", left.group(1), "--answer", "approve")
    assert waited.returncode == exit_codes.WAITING, waited.stderr
    assert answered.returncode == exit_codes.COMPLETED, answered.stderr
    done = RUN_LINE.search(answered.stdout)
    assert left.group(2) == "WAITING", waited.stdout
    assert done is not None and done.group(2) == "COMPLETED", answered.stdout
    # the hint names the server: without --server the command would look in a local workspace
    hint = f"workbench --server {server.url} resume {left.group(1)} --answer approve"
    assert f"answer and continue with: {hint}" in " ".join(waited.stdout.split())  # unwrapped
    assert f"answer with: {hint}" in " ".join(shown.stdout.split())
    for line in (
        "plan answered automatically: approve",
        "execute started",
        "run finished COMPLETED",
    ):
        assert line in answered.stdout  # the worker's events, printed here live
    # resumed from here with the answer: followed from where it stopped, nothing run again
    assert resumed.returncode == exit_codes.FAILED, resumed.stderr  # a rejected plan fails
    assert "plan answered: reject" in resumed.stdout
    assert "warm_cache started" not in resumed.stdout
    assert "run started" not in resumed.stdout
    assert finished_already.returncode != exit_codes.COMPLETED
    assert len(finished_already.stderr.strip().splitlines()) == 1, finished_already.stderr
    assert "is FAILED; only a RUNNING or WAITING run is queued again" in finished_already.stderr
    with PostgresRunStore(pg_database) as store:
        assert store.get_run(left.group(1)).status == RunStatus.FAILED
        assert store.pending_interrupts(left.group(1)) == []
        assert store.get_run(done.group(1)).status == RunStatus.COMPLETED

    refused = run_here("--engine", "shadow")
    assert refused.returncode == exit_codes.BAD_INPUT
    assert len(refused.stderr.strip().splitlines()) == 1
    assert "--engine shadow runs on this machine only" in refused.stderr
