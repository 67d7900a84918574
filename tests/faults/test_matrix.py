"""The fault matrix (issue 12): each command family under each fault, through the real executable.

For every cell the command prints ONE line (``error: …`` naming the file or folder and what to
do) with exit code 2 — or, for a command that only reads, succeeds — never a traceback; and
the store is intact afterwards: PRAGMA integrity_check passes, every earlier run is still
listed, and a run the fault stopped continues with ``workbench resume``. A damaged file and a
read-only workspace are left byte for byte as they were.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults.faults import FAULTS, Faulted, full_disk
from tests.faults.processes import Outcome, app_outcome, finish, outcome, spawn, spawn_app
from tests.faults.workspace import (
    HELD_CHAIN,
    QUESTION,
    RESEARCH,
    Template,
    assert_intact,
    copy_template,
    event_seqs,
    fingerprint,
    new_runs,
    state,
    step_finishes,
)
from workflows import WORKFLOWS_DIR

FAMILIES = ("run", "resume", "research", "corpus", "runs", "providers", "app")
READERS = {"runs", "providers", "app"}
"""Families whose command only reads (the app reads until a run starts): under a fault they may
also succeed."""
SAYS = {
    "read-only": ("writable", "cannot be written"),
    "full-disk": ("full", "disk"),
    "locked": ("locked",),
    "damaged": ("damaged", "malformed", "not a database"),
}
"""Words the one line must contain, per fault."""
POLL_S = 0.05
POLL_ROUNDS = 2400
"""A wait for the store to show progress: bounded by rounds of POLL_S, never skipped."""


def family_args(family: str, template: Template) -> list[str]:
    return {
        "run": ["run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless"],
        "resume": ["resume", template.waiting, "--answer", "approve"],
        "research": ["research", QUESTION, *RESEARCH, "--on-interrupt", "default"],
        "corpus": ["corpus", "add", str(template.notes), "--name", "more-notes"],
        "runs": ["runs", "list"],
        "providers": ["providers"],
    }[family]


def invoke(family: str, template: Template, faulted: Faulted) -> Outcome:
    if family == "app":
        return app_outcome(faulted.workspace, faulted.prefix)
    return outcome(faulted.workspace, family_args(family, template), faulted.prefix)


def assert_no_traceback(done: Outcome) -> None:
    assert "Traceback" not in done.stdout + done.stderr, done.stderr


def assert_one_line(done: Outcome, *says: str) -> str:
    """Exit code 2 and one ``error:`` line holding one of ``says``."""
    assert_no_traceback(done)
    assert done.code == 2, done
    [line] = done.error_lines
    assert line.startswith("error: "), line
    assert any(word in line for word in says), line
    return line


def assert_resumes_to_completion(workspace: Path, run_id: str) -> None:
    done = outcome(
        workspace, ["resume", run_id, "--answer", "approve", "--on-interrupt", "default"]
    )
    assert done.code == 0, done
    assert state(workspace).statuses[run_id] == "COMPLETED"
    assert_seqs_without_gaps(workspace, run_id)


def assert_seqs_without_gaps(workspace: Path, run_id: str) -> None:
    seqs = event_seqs(workspace, run_id)
    assert seqs == list(range(1, len(seqs) + 1)), f"event seqs of {run_id} have a gap"


CELLS = [(fault, family) for fault in FAULTS for family in FAMILIES]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("fault", "family"), CELLS)
def test_a_fault_is_one_line_and_the_store_survives(
    fault: str, family: str, template: Template, tmp_path: Path
) -> None:
    with FAULTS[fault](template, tmp_path) as faulted:
        before = fingerprint(faulted.workspace)
        done = invoke(family, template, faulted)
        if family in READERS and done.code == 0:
            assert_no_traceback(done)
            assert not done.stderr.strip(), done.stderr
            if family == "runs":
                assert template.completed in done.stdout
            if family == "app":
                assert "Workflows" in done.stdout
        else:
            assert_one_line(done, *SAYS[fault])
        if fault in ("read-only", "damaged"):
            assert fingerprint(faulted.workspace) == before, "a file was changed"
        faulted.release()
        if fault == "damaged":
            return
        assert_intact(faulted.workspace, template)
        waiting = state(faulted.workspace).statuses[template.waiting]
        if family == "resume" and fault != "full-disk":
            assert waiting == "WAITING"
        stopped = [*new_runs(faulted.workspace, template)]
        if family == "resume":
            stopped.append(template.waiting)
        for run_id in stopped:
            if state(faulted.workspace).statuses[run_id] in ("RUNNING", "WAITING"):
                assert_resumes_to_completion(faulted.workspace, run_id)


ROOMS_KIB = (24, 48, 96, 192)
"""Free space left on the disk: enough to start a run, too little to finish it."""


@pytest.mark.timeout(600)
def test_a_disk_that_fills_mid_run_is_one_line_and_the_run_resumes(
    template: Template, tmp_path: Path
) -> None:
    """The run starts, the disk fills under it: one line, exit 2; once space is freed the
    stopped run resumes to completion, its events numbered without a gap (a failed write or
    COMMIT gives back the numbers it took). At least one of the rooms stops a run midway."""
    stopped_midway = 0
    for room in ROOMS_KIB:
        with full_disk(template, tmp_path / f"room-{room}", room=room * 1024) as faulted:
            args = ["run", str(template.held_workflow), "--headless", "--on-interrupt", "default"]
            done = outcome(faulted.workspace, args)
            if done.code != 0:
                assert_one_line(done, *SAYS["full-disk"])
            faulted.release()
            assert_intact(faulted.workspace, template)
            for run_id, status in new_runs(faulted.workspace, template).items():
                if status == "RUNNING":
                    stopped_midway += 1
                    assert_resumes_to_completion(faulted.workspace, run_id)
                    assert_no_step_finished_twice(faulted.workspace, run_id)
    assert stopped_midway >= 1, "no room size stopped a run midway"


# -- a process killed mid-write ------------------------------------------------------------


def wait_until(check: Callable[[], bool], what: str) -> None:
    for _ in range(POLL_ROUNDS):
        if check():
            return
        time.sleep(POLL_S)
    raise AssertionError(f"never saw {what}")


def newest_run(workspace: Path, template: Template) -> str | None:
    if not (workspace / "runs.sqlite").exists():
        return None
    runs = new_runs(workspace, template)
    return max(runs) if runs else None


def kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)


def start_held_run(workspace: Path, template: Template) -> str:
    """Start the held chain (its prompt waits on a silent stdin), kill it once it has written
    several steps; the run id."""
    process = spawn(
        workspace,
        ["run", str(template.held_workflow), "--headless", "--on-interrupt", "ask"],
    )
    progress: dict[str, str] = {}

    def chain_started() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"the held run ended by itself: {finish(process)}")
        run_id = newest_run(workspace, template)
        progress["run"] = run_id or ""
        return bool(run_id) and len(step_finishes(workspace, run_id or "")) >= 5

    try:
        wait_until(chain_started, "the held chain's first steps finish")
    finally:
        kill(process)
    return progress["run"]


def assert_no_step_finished_twice(workspace: Path, run_id: str) -> None:
    twice = {step: n for step, n in step_finishes(workspace, run_id).items() if n > 1}
    assert not twice, f"finished steps ran again: {twice}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("family", ["run", "resume", "research", "corpus", "app"])
def test_a_process_killed_mid_write_loses_nothing(
    family: str, template: Template, tmp_path: Path
) -> None:
    workspace = copy_template(template, tmp_path / "ws")
    if family == "run":
        run_id = start_held_run(workspace, template)
    elif family == "resume":
        run_id = start_held_run(workspace, template)
        finished = len(step_finishes(workspace, run_id))
        seqs = len(event_seqs(workspace, run_id))
        process = spawn(workspace, ["resume", run_id, "--on-interrupt", "ask"])
        try:
            wait_until(
                lambda: (
                    len(event_seqs(workspace, run_id)) > seqs
                    and (len(step_finishes(workspace, run_id)) > finished or finished >= HELD_CHAIN)
                ),
                "the resumed run write",
            )
        finally:
            kill(process)
    elif family == "research":
        process = spawn(workspace, ["research", QUESTION, *RESEARCH, "--on-interrupt", "ask"])
        holder: dict[str, str] = {}

        def prompt_raised() -> bool:
            holder["run"] = newest_run(workspace, template) or ""
            return bool(holder["run"]) and any(
                kind == "interrupt_raised" for kind in _kinds(workspace, holder["run"])
            )

        try:
            wait_until(prompt_raised, "the research plan's prompt")
        finally:
            kill(process)
        run_id = holder["run"]
    elif family == "corpus":
        big = _many_notes(tmp_path / "many")
        process = spawn(workspace, ["corpus", "add", str(big)])
        wal = workspace / "corpus.sqlite-wal"
        try:
            wait_until(lambda: wal.exists() and wal.stat().st_size > 1 << 16, "the index grow")
        finally:
            kill(process)
        assert_intact(workspace, template)
        assert _collections(workspace) == _collections(template.path)
        return
    else:
        term = spawn_app(workspace, ["run", str(template.held_workflow)])
        holder = {}

        def app_run_progressed() -> bool:
            term.pump()
            holder["run"] = newest_run(workspace, template) or ""
            return bool(holder["run"]) and len(step_finishes(workspace, holder["run"])) >= 5

        try:
            wait_until(app_run_progressed, "the app's run write")
        finally:
            term.child.kill(signal.SIGKILL)
            term.close()
        run_id = holder["run"]
    assert_intact(workspace, template)
    assert state(workspace).statuses[run_id] == "RUNNING"
    assert_seqs_without_gaps(workspace, run_id)
    assert_resumes_to_completion(workspace, run_id)
    assert_no_step_finished_twice(workspace, run_id)


def _kinds(workspace: Path, run_id: str) -> list[str]:
    import sqlite3

    db = sqlite3.connect(f"file:{workspace / 'runs.sqlite'}?mode=ro", uri=True)
    try:
        return [k for (k,) in db.execute("SELECT kind FROM events WHERE run_id = ?", (run_id,))]
    finally:
        db.close()


def _collections(workspace: Path) -> dict[str, int]:
    import sqlite3

    db = sqlite3.connect(f"file:{workspace / 'corpus.sqlite'}?mode=ro", uri=True)
    try:
        return dict(
            db.execute("SELECT collection, COUNT(*) FROM documents GROUP BY collection").fetchall()
        )
    finally:
        db.close()


def _many_notes(folder: Path, count: int = 1500) -> Path:
    """A folder big enough that indexing it spills to the write-ahead log before committing."""
    folder.mkdir()
    for index in range(count):
        words = " ".join(f"word{(index * 7 + k) % 997} item{k}" for k in range(300))
        (folder / f"note{index:04d}.txt").write_text(f"Note {index}\n\n{words}\n")
    return folder


# -- a concurrent second process -------------------------------------------------------------


def _race(workspace: Path, first: list[str], second: list[str]) -> tuple[Outcome, Outcome]:
    processes = [spawn(workspace, args, silent_stdin=False) for args in (first, second)]
    a, b = (finish(process) for process in processes)
    return a, b


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "family",
    [
        "run",
        "research",
        "corpus",
        "runs",
        "providers",
    ],
)
def test_two_processes_at_once_both_succeed(
    family: str, template: Template, tmp_path: Path
) -> None:
    """Research and corpus race on a NEW workspace (the corpus is built by the first comer);
    the others on one with history."""
    if family in ("research", "corpus"):
        workspace = tmp_path / "new"
    else:
        workspace = copy_template(template, tmp_path / "ws")
    args = family_args(family, template)
    for done in _race(workspace, args, args):
        assert_no_traceback(done)
        assert done.code == 0, done
    if family in ("research", "corpus"):
        found = state(workspace)
        assert set(found.integrity.values()) == {"ok"}, found.integrity
        if family == "research":
            assert sorted(found.statuses.values()) == ["COMPLETED", "COMPLETED"]
        return
    assert_intact(workspace, template)
    if family == "run":
        assert sorted(new_runs(workspace, template).values()) == ["COMPLETED", "COMPLETED"]


@pytest.mark.timeout(600)
def test_two_resumes_with_different_answers_apply_one(template: Template, tmp_path: Path) -> None:
    """One resume drives the run with its own answer; the other says so in one line."""
    workspace = copy_template(template, tmp_path / "ws")
    approve, reject = _race(
        workspace,
        ["resume", template.waiting, "--answer", "approve"],
        ["resume", template.waiting, "--answer", "reject"],
    )
    codes = {"approve": approve.code, "reject": reject.code}
    winners = [answer for answer, code in codes.items() if code != 2]
    assert len(winners) == 1, (approve, reject)
    loser = reject if winners == ["approve"] else approve
    assert_one_line(loser, "resum", "COMPLETED", "FAILED", "RUNNING")
    expected = {"approve": ("COMPLETED", 0), "reject": ("FAILED", 1)}[winners[0]]
    assert (state(workspace).statuses[template.waiting], codes[winners[0]]) == expected
    assert_intact(workspace, template)


@pytest.mark.timeout(600)
def test_two_apps_at_once_both_start(template: Template, tmp_path: Path) -> None:
    workspace = copy_template(template, tmp_path / "ws")
    terms = [spawn_app(workspace, ["app"]), spawn_app(workspace, ["app"])]
    try:
        for term in terms:
            term.wait_for("Workflows")
        for term in terms:
            term.quit()
            term.child.close()
            assert term.child.exitstatus == 0
    finally:
        for term in terms:
            term.close()
    assert_intact(workspace, template)
