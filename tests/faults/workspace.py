"""A workspace with history, built once per session through the real executable, and its checks.

The template holds a COMPLETED run (fan_out), a WAITING run (approval), a COMPLETED research
run — so the corpus (python-docs, built on first use) and the provider statistics exist — and a
notes collection. Each test works on its own copy. ``state`` reads a workspace the way a
person's next command would need it: PRAGMA integrity_check of every database and every run's
status, read-only so the check itself changes nothing.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from tests.faults.processes import outcome
from workflows import WORKFLOWS_DIR

DATABASES = ("runs.sqlite", "corpus.sqlite", "provider_stats.sqlite3")
QUESTION = "How does asyncio schedule tasks?"
RESEARCH = ["--headless", "--max-rounds", "1"]
NOTES = {
    "scheduling.md": "# Scheduling\n\nA wavefront scheduler starts a step when its last "
    "dependency settles.\n",
    "journals.txt": "A call journal answers a repeated call from the store instead of the model.\n",
    "breakers.rst": "Breakers\n========\n\nA breaker opens after repeated failures and probes "
    "after its cooldown.\n",
}
TEMPLATE_COMMAND_TIMEOUT_S = 280
"""How long one of the template's commands may take before it counts as hung. Its research run
is often the test session's first: it builds the default corpus and encodes every document's
head (about 40 s of CPU in all on an idle machine, measured; several times that in wall time on
a shared one), so it gets more than the 180 s of a test's own command. The template is built in
the setup of the first fault test that asks for it, inside that test's time limit: every test
that uses the template is given 600 s."""
HELD_CHAIN = 40
"""Steps of the chain that keeps writing while the held prompt waits (see ``write_held_workflow``)."""


@dataclass(frozen=True)
class Template:
    path: Path
    completed: str
    waiting: str
    research: str
    notes: Path
    held_workflow: Path


@dataclass(frozen=True)
class StoreState:
    integrity: dict[str, str]
    """Database file name -> PRAGMA integrity_check's first row ('ok')."""
    statuses: dict[str, str]
    """run id -> status."""


def write_notes(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def write_held_workflow(path: Path) -> Path:
    """A prompt nobody answers holds the run open while a chain of steps beside it keeps writing.

    Started with ``--on-interrupt ask`` and a silent stdin, the run can never finish on its
    own: a kill always lands in a live run, whatever the machine's speed.
    """
    lines = [
        "name: held_chain",
        "description: A prompt holds the run open while a chain keeps writing.",
        "steps:",
        "  - id: hold",
        "    uses: demo.echo",
        "    interrupt: {after: true, kind: approval, prompt: 'Go on?'}",
    ]
    for index in range(HELD_CHAIN):
        lines += [f"  - id: c{index}", "    uses: demo.echo"]
        if index:
            lines.append(f"    depends_on: [c{index - 1}]")
    lines += ["  - id: done", "    uses: demo.gather", f"    depends_on: [hold, c{HELD_CHAIN - 1}]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _only_new_run(workspace: Path, before: set[str]) -> str:
    [run_id] = set(state(workspace).statuses) - before
    return run_id


def build_template(root: Path) -> Template:
    """The session's workspace with history (built once; about 40 s of CPU when its research run
    is the session's first)."""
    workspace = root / "template"
    notes = write_notes(root / "notes")
    held = write_held_workflow(root / "held_chain.yaml")
    steps = [
        ["run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless"],
        ["run", str(WORKFLOWS_DIR / "approval.yaml"), "--headless", "--on-interrupt", "wait"],
        ["research", QUESTION, *RESEARCH, "--on-interrupt", "default"],
        ["corpus", "add", str(notes)],
    ]
    ids: list[str] = []
    for args in steps:
        before = set(state(workspace).statuses) if (workspace / "runs.sqlite").exists() else set()
        done = outcome(workspace, args, timeout_s=TEMPLATE_COMMAND_TIMEOUT_S)
        assert done.code in (0, 4), done.stderr
        if args[0] != "corpus":
            ids.append(_only_new_run(workspace, before))
    return Template(workspace, ids[0], ids[1], ids[2], notes, held)


def copy_template(template: Template, destination: Path) -> Path:
    shutil.copytree(template.path, destination)
    return destination


def fingerprint(workspace: Path) -> dict[str, str]:
    """sha256 of every database file in ``workspace`` (SQLite's -wal and -shm side files aside:
    opening a database in WAL mode creates them, empty of data)."""
    return {
        name: hashlib.sha256((workspace / name).read_bytes()).hexdigest()
        for name in DATABASES
        if (workspace / name).is_file()
    }


def state(workspace: Path) -> StoreState:
    integrity: dict[str, str] = {}
    statuses: dict[str, str] = {}
    for name in DATABASES:
        path = workspace / name
        if not path.exists():
            continue
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            integrity[name] = db.execute("PRAGMA integrity_check").fetchone()[0]
            if name == "runs.sqlite":
                statuses = dict(db.execute("SELECT run_id, status FROM runs").fetchall())
        finally:
            db.close()
    return StoreState(integrity, statuses)


def assert_intact(workspace: Path, template: Template) -> StoreState:
    """Every database passes integrity_check and every earlier run is still stored, unchanged
    unless it is the WAITING run a command may have answered."""
    found = state(workspace)
    assert set(found.integrity.values()) == {"ok"}, found.integrity
    earlier = state(template.path).statuses
    for run_id, status in earlier.items():
        assert run_id in found.statuses, f"run {run_id} was lost"
        if run_id != template.waiting:
            assert found.statuses[run_id] == status, (run_id, found.statuses[run_id])
    return found


def new_runs(workspace: Path, template: Template) -> dict[str, str]:
    """Runs the faulted command stored: run id -> status."""
    earlier = set(state(template.path).statuses)
    return {k: v for k, v in state(workspace).statuses.items() if k not in earlier}


def step_finishes(workspace: Path, run_id: str) -> dict[str, int]:
    """How often each step of ``run_id`` finished (``step_finished`` events), and the event seqs."""
    db = sqlite3.connect(f"file:{workspace / 'runs.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT json_extract(body, '$.step_id'), json_extract(body, '$.iteration'), "
            "COUNT(*) FROM events WHERE run_id = ? AND kind = 'step_finished' GROUP BY 1, 2",
            (run_id,),
        ).fetchall()
    finally:
        db.close()
    return {f"{step}#{iteration}": count for step, iteration, count in rows}


def event_seqs(workspace: Path, run_id: str) -> list[int]:
    db = sqlite3.connect(f"file:{workspace / 'runs.sqlite'}?mode=ro", uri=True)
    try:
        return [
            seq
            for (seq,) in db.execute(
                "SELECT seq FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
            )
        ]
    finally:
        db.close()
