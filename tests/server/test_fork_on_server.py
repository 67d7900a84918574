"""`workbench --server URL runs fork RUN --at STEP` and ``POST /v1/runs/{id}/fork`` against a
real server process and a real worker: the fork is stored by the server as the local fork
stores it, run by the worker from the fork point (only the step and what follows it run
again — as tests/engine/test_fork.py asserts of the local fork), followed here; refusals are
one line."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import httpx

from engine.events import StepStarted
from engine.states import RunStatus
from engine.store.postgres import PostgresRunStore
from tests.server.serving import ServerProcess, server_env, workbench_on
from tests.worker.workers import DEADLINE_S, PATIENT, workers
from tui import exit_codes
from workflows import WORKFLOWS_DIR

RUN_LINE = re.compile(r"^run (\S+): (\w+)", re.MULTILINE)


def test_a_run_forked_on_a_server_reruns_only_the_steps_after_the_fork_point(
    server: ServerProcess, api: httpx.Client, pg_database: str, tmp_path: Path
) -> None:
    env = server_env(tmp_path / "client-home", tmp_path / "none.yaml")

    workbench = workbench_on(server.url, env, DEADLINE_S)

    with workers(pg_database, tmp_path, 1, *PATIENT):
        ran = workbench("run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless")
        parent = RUN_LINE.search(ran.stdout)
        assert ran.returncode == exit_codes.COMPLETED and parent is not None, ran.stderr
        forked = workbench("runs", "fork", parent.group(1), "--at", "summarise_code")
        edited = api.post(
            f"/v1/runs/{parent.group(1)}/fork",
            json={"at": "merge", "sets": ["summarise_code.topic=edited"], "run_id": "edited-1"},
        )
        assert edited.status_code == 202, edited.text
        followed = workbench("runs", "show", "edited-1")  # queued or done: the server has it
    assert forked.returncode == exit_codes.COMPLETED, forked.stdout + forked.stderr
    fork_line = RUN_LINE.search(forked.stdout)
    assert fork_line is not None and fork_line.group(2) == "COMPLETED", forked.stdout
    assert "summarise_code started" in forked.stdout  # the worker's events, printed here live
    assert "search_web started" not in forked.stdout
    assert edited.json() == {
        "run_id": "edited-1",
        "workflow": "fan_out",
        "engine": "kahn",
        "status": "queued",
    }
    assert followed.returncode == 0 and "forked from" in followed.stdout, followed.stderr
    with PostgresRunStore(pg_database) as store:
        fork = store.get_run(fork_line.group(1))
        started = Counter(
            e.step_id for e in store.events(fork.run_id) if isinstance(e, StepStarted)
        )
        assert fork.parent_run_id == parent.group(1) and fork.forked_at == "summarise_code"
        assert fork.status == RunStatus.COMPLETED
        assert started == Counter({"summarise_code": 1, "merge": 1})
        assert store.get_run("edited-1").parent_run_id == parent.group(1)
        kept = store.step_results("edited-1")["summarise_code"]
        assert kept.outputs["topic"] == "edited"

    refused = httpx.post(f"{server.url}/v1/runs/{parent.group(1)}/fork", json={"at": "merge"})
    assert refused.status_code == 401 and "needs its token" in refused.json()["error"]
    unknown_run = api.post("/v1/runs/no-such-run/fork", json={"at": "merge"})
    assert unknown_run.status_code == 404
    assert "no-such-run" in unknown_run.json()["error"]
    unknown_step = workbench("runs", "fork", parent.group(1), "--at", "nope")
    assert unknown_step.returncode == exit_codes.BAD_INPUT
    assert len(unknown_step.stderr.strip().splitlines()) == 1, unknown_step.stderr
    assert "no step 'nope'" in unknown_step.stderr
    bad_edit = api.post(f"/v1/runs/{parent.group(1)}/fork", json={"at": "merge", "sets": ["x"]})
    assert bad_edit.status_code == 400
    assert bad_edit.json()["error"] == "--set 'x' is not step.field=value"
