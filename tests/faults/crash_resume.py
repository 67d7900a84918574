"""Crash-resume figures: SIGKILL a real ``workbench run`` at random points, ``workbench resume`` it.

    .venv/bin/python -m tests.faults.crash_resume [--tries N] [--seed S] [--workflow NAME …]

For each shipped workflow on each engine: one uninterrupted reference run, then ``--tries``
runs each killed (SIGKILL) at a random moment between the run's first stored event and the
reference run's duration, and resumed until it ends. A kill survives when the resumed run ends
with the reference's status and outputs, no finished step finished again, and its event numbers
have no gap. A run that ended before its kill landed is counted apart (not a try). Prints one
line per workflow and engine and the totals. Runs on loopback only (the built-in model).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.faults.processes import outcome, spawn
from tests.faults.workspace import QUESTION, event_seqs, step_finishes
from workflows import WORKFLOWS_DIR

ENGINES = ("kahn", "langgraph")
FASTER = {"deep_research": ["--input", "max_rounds=1"]}
"""Inputs that shorten a long workflow (each try runs it twice)."""
POLL_S = 0.005
MAX_RESUMES = 3


@dataclass
class Tally:
    tries: int = 0
    survived: int = 0
    ended_before_kill: int = 0
    failures: list[str] | None = None


def _run_row(workspace: Path, run_id: str | None = None) -> tuple[str, str, str, float] | None:
    path = workspace / "runs.sqlite"
    if not path.exists():
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        query = "SELECT run_id, status, outputs, COALESCE(finished_ts, updated_ts) - created_ts "
        query += "FROM runs ORDER BY created_ts DESC LIMIT 1"
        row = db.execute(query).fetchone()
    except sqlite3.OperationalError:
        return None
    finally:
        db.close()
    return row if row is None or run_id is None or row[0] == run_id else None


def _args(workflow: Path, engine: str) -> list[str]:
    return [
        "run",
        str(workflow),
        "--headless",
        "--engine",
        engine,
        "--on-interrupt",
        "default",
        *_required_inputs(workflow),
        *FASTER.get(workflow.stem, []),
    ]


def _required_inputs(workflow: Path) -> list[str]:
    """The question for every required string input (the others run on their defaults)."""
    declared = (yaml.safe_load(workflow.read_text(encoding="utf-8")) or {}).get("inputs") or {}
    args: list[str] = []
    for name, spec in declared.items():
        if isinstance(spec, dict) and spec.get("required") and spec.get("type") == "string":
            args += ["--input", f"{name}={QUESTION}"]
    return args


def _fresh(seed: Path, root: Path) -> Path:
    """A new workspace holding a copy of the seed's corpus (built once, not per try)."""
    workspace = Path(tempfile.mkdtemp(dir=root))
    for name in ("corpus.sqlite",):
        if (seed / name).exists():
            shutil.copy(seed / name, workspace / name)
    return workspace


def _finish(workspace: Path, run_id: str) -> str:
    """Resume until the run ends; its final status."""
    for _ in range(MAX_RESUMES):
        row = _run_row(workspace, run_id)
        assert row is not None
        if row[1] not in ("RUNNING", "WAITING"):
            return row[1]
        outcome(workspace, ["resume", run_id, "--on-interrupt", "default"])
    row = _run_row(workspace, run_id)
    assert row is not None
    return row[1]


def one_try(
    workflow: Path, engine: str, seed: Path, root: Path, window_s: float, rng: random.Random
) -> str | None:
    """Kill, resume, compare; '' when it survived, the reason when not, None when it ended first."""
    workspace = _fresh(seed, root)
    process = spawn(workspace, _args(workflow, engine))
    try:
        while _run_row(workspace) is None:
            if process.poll() is not None:
                return "the run never started"
            time.sleep(POLL_S)
        time.sleep(rng.uniform(0, window_s))
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    row = _run_row(workspace)
    assert row is not None
    run_id = row[0]
    if process.returncode != -signal.SIGKILL or row[1] not in ("RUNNING", "WAITING"):
        return None
    status = _finish(workspace, run_id)
    final = _run_row(workspace, run_id)
    assert final is not None
    reference = _reference[(workflow.stem, engine)]
    problems = []
    if (status, _outputs(final[2], run_id, workspace)) != (reference[0], reference[1]):
        problems.append(f"ended {status} with other outputs than the reference ({reference[0]})")
    twice = [step for step, count in step_finishes(workspace, run_id).items() if count > 1]
    if twice:
        problems.append(f"finished steps ran again: {twice}")
    seqs = event_seqs(workspace, run_id)
    if seqs != list(range(1, len(seqs) + 1)):
        problems.append("a gap in the event numbers")
    shutil.rmtree(workspace, ignore_errors=True)
    return "; ".join(problems)


_reference: dict[tuple[str, str], tuple[str, object, float]] = {}


def _outputs(text: str, run_id: str, workspace: Path) -> object:
    """A run's outputs with its own id and workspace folder replaced, so runs compare."""
    return json.loads(text.replace(str(workspace), "WORKSPACE").replace(run_id, "RUN_ID"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--workflow", action="append", default=[])
    options = parser.parse_args(argv)
    rng = random.Random(options.seed)
    workflows = sorted(WORKFLOWS_DIR.glob("*.yaml"))
    if options.workflow:
        workflows = [w for w in workflows if w.stem in options.workflow]
    root = Path(tempfile.mkdtemp(prefix="crash-resume-"))
    totals = Tally()
    try:
        seed = root / "seed"
        outcome(seed, ["corpus", "list"])  # builds the default corpus once
        for workflow in workflows:
            for engine in ENGINES:
                reference_ws = _fresh(seed, root)
                done = outcome(reference_ws, _args(workflow, engine))
                row = _run_row(reference_ws)
                if row is None:
                    print(f"{workflow.stem:16} {engine:9} no reference run: {done.stderr.strip()}")
                    continue
                outputs = _outputs(row[2], row[0], reference_ws)
                _reference[(workflow.stem, engine)] = (row[1], outputs, row[3])
                tally = Tally(failures=[])
                for _ in range(options.tries):
                    result = one_try(workflow, engine, seed, root, row[3], rng)
                    if result is None:
                        tally.ended_before_kill += 1
                        continue
                    tally.tries += 1
                    if result:
                        assert tally.failures is not None
                        tally.failures.append(result)
                    else:
                        tally.survived += 1
                print(
                    f"{workflow.stem:16} {engine:9} reference {row[1]:9} ({row[3]:.2f} s): "
                    f"{tally.survived}/{tally.tries} kills survived, "
                    f"{tally.ended_before_kill} ended before the kill"
                    + (f"; {tally.failures[0]}" if tally.failures else ""),
                    flush=True,
                )
                totals.tries += tally.tries
                totals.survived += tally.survived
                totals.ended_before_kill += tally.ended_before_kill
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"total: {totals.survived} of {totals.tries} kills survived "
        f"({totals.ended_before_kill} runs ended before their kill)"
    )
    return 0 if totals.survived == totals.tries else 1


if __name__ == "__main__":
    sys.exit(main())
