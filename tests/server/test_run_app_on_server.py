"""`workbench --server URL run FILE` without --headless, as a person runs it: the real
`workbench` process in a pseudo-terminal (pexpect, read through pyte) opens the app straight
onto the new run, which is sent to a real `workbench server` process and run by a real worker;
its prompt is answered in the app, the answer goes to the server, and the run completes there."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.events import InterruptResolved
from engine.states import RunStatus
from engine.store.postgres import PostgresRunStore
from tests.server.serving import ServerProcess
from tests.tui.terminal import E2E_TIMEOUT_S, F2, spawn_workbench, terminal_env
from tests.worker.workers import PATIENT, workers
from workflows import WORKFLOWS_DIR


@pytest.mark.timeout(E2E_TIMEOUT_S)
def test_run_attached_to_a_server_opens_the_app_on_the_run_and_the_answer_completes_it(
    server: ServerProcess, pg_database: str, tmp_path: Path
) -> None:
    env = terminal_env(
        tmp_path, WORKBENCH_HOME=str(tmp_path / "client-home"), WORKBENCH_TOKEN=server.token
    )
    approval = str(WORKFLOWS_DIR / "approval.yaml")
    with workers(pg_database, tmp_path, 1, *PATIENT):
        term = spawn_workbench(["--server", server.url, "run", approval, "-i", "topic=x"], env)
        try:
            # the app on the run: the worker's prompt, the waiting step behind it
            for words in ["Approve the plan?", "‖ plan", "1 waiting: plan (approval)"]:
                term.wait_for(words)
            term.press(F2, lambda: "COMPLETED" in term.text(), "the run completing")
            term.quit()
        finally:
            term.close()
    with PostgresRunStore(pg_database) as store:
        [run] = store.list_runs()
        resolved = [e for e in store.events(run.run_id) if isinstance(e, InterruptResolved)]
    assert (run.workflow, run.status) == ("approval", RunStatus.COMPLETED)
    assert [(e.step_id, e.answer["action"], e.automatic) for e in resolved] == [
        ("plan", "approve", False)
    ]
    assert not (tmp_path / "client-home" / "runs.sqlite").exists()  # nothing ran on this machine
