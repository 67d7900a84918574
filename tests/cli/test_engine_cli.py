"""`workbench validate / run / runs / resume` end to end, each in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine.store import RunStore
from workflows import WORKFLOWS_DIR

REPO = Path(__file__).resolve().parents[2]


def workbench(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}
    env.pop("WORKBENCH_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "--workspace", str(workspace), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=240,
    )


def test_validate_prints_a_summary_or_every_problem(tmp_path: Path) -> None:
    ok = workbench(tmp_path, "validate", str(WORKFLOWS_DIR / "fan_out.yaml"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("ok: fan_out: 6 steps, 7 edges; engine kahn (auto: acyclic")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nsteps:\n  - id: a\n    uses: demo.echo\n    depends_on: [nowhere]\n")
    problems = workbench(tmp_path, "validate", str(bad))
    assert problems.returncode == 1
    lines = problems.stderr.strip().splitlines()
    assert lines and all(line.startswith(f"{bad}:5:") for line in lines)
    missing = workbench(tmp_path, "validate", str(tmp_path / "nope.yaml"))
    assert (missing.returncode, missing.stderr.strip()) == (
        2,
        f"error: {tmp_path / 'nope.yaml'}: no such workflow file; check the path",
    )


def test_run_headless_prints_progress_and_the_final_table(tmp_path: Path) -> None:
    done = workbench(
        tmp_path,
        "run",
        str(WORKFLOWS_DIR / "value_branch.yaml"),
        "--headless",
        "--input",
        "text=all good",
    )
    assert done.returncode == 0, done.stderr
    assert "ship started" in done.stdout
    assert "escalate skipped: not routed (by classify)" in done.stdout
    assert "classify routes to ship" in done.stdout
    assert "COMPLETED" in done.stdout and "steps" in done.stdout
    failing = tmp_path / "failing.yaml"
    failing.write_text("name: failing\nsteps:\n  - id: boom\n    uses: demo.fail\n")
    failed = workbench(tmp_path, "run", str(failing), "--headless")
    assert failed.returncode == 1
    assert "boom failed: DemoFailure" in failed.stdout


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    typed = tmp_path / "typed.yaml"
    typed.write_text(
        "name: typed\ninputs:\n  n: {type: int, default: 1}\n  q: {type: string, default: x}\n"
        "steps:\n  - id: a\n    uses: demo.echo\n"
    )
    bad_value = workbench(tmp_path, "run", str(typed), "--headless", "--input", "n=lots")
    assert (bad_value.returncode, bad_value.stderr.strip()) == (
        2,
        "error: input 'n' must be a whole number, got 'lots'",
    )
    # a byte that is not UTF-8 in an argument: it stopped the run with "unexpected" before
    not_text = workbench(tmp_path, "run", str(typed), "--headless", "--input", "q=caf\udce9")
    assert (not_text.returncode, not_text.stderr.strip()) == (
        2,
        "error: input 'q' is not UTF-8 text (it holds a byte no character is made of);"
        " give it again as UTF-8",
    )
    unknown_run = workbench(tmp_path, "runs", "show", "no-such-run")
    assert unknown_run.returncode == 2
    assert (
        unknown_run.stderr.strip()
        == "error: no run 'no-such-run' in the run store; see workbench runs list"
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    yaml_error = workbench(tmp_path, "run", str(broken), "--headless")
    assert yaml_error.returncode == 2
    assert yaml_error.stderr.startswith(f"{broken}:") and "Traceback" not in yaml_error.stderr


def test_waiting_run_is_listed_shown_exported_and_resumed(tmp_path: Path) -> None:
    waiting = workbench(
        tmp_path,
        "run",
        str(WORKFLOWS_DIR / "approval.yaml"),
        "--headless",
        "--on-interrupt",
        "wait",
    )
    assert waiting.returncode == 4, waiting.stderr
    assert "plan asks: Approve the plan?" in waiting.stdout
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.list_runs()[0].run_id
    store.close()

    listed = workbench(tmp_path, "runs", "list")
    assert run_id in listed.stdout and "WAITING" in listed.stdout
    shown = workbench(tmp_path, "runs", "show", run_id)
    assert "waiting: plan asks Approve the plan?" in shown.stdout

    resumed = workbench(tmp_path, "resume", run_id, "--answer", "approve")
    assert resumed.returncode == 0, resumed.stderr
    assert "plan answered: approve" in resumed.stdout
    assert "warm_cache started" not in resumed.stdout, "finished steps are not run again"

    exported = workbench(tmp_path, "runs", "export", run_id, "--format", "jsonl")
    events = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["kind"] for e in events].count("run_started") == 2
    assert events[-1]["kind"] == "run_finished" and events[-1]["status"] == "COMPLETED"
    again = workbench(tmp_path, "resume", run_id)
    assert again.returncode == 2
    assert (
        again.stderr.strip()
        == f"error: run {run_id} is COMPLETED; only a RUNNING or WAITING run resumes"
    )
