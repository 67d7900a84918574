"""Progress a person can see, and output a script can parse, from the real `workbench` process.

Piped, a wait is plain count lines a log keeps; in a terminal (a pseudo-terminal read through
pyte, as a person sees it) it is a rich bar with the same counts. `runs show --json` and
`providers --json` print one JSON document of the shape the README documents.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pexpect
import pytest
from rich.console import Console

from engine.events import RunEvent
from tests.cli.test_engine_cli import workbench
from tests.tools.sample_run import research_events
from tests.tui.terminal import PROCESS_S, spawn_workbench, terminal_env
from tui.present.progress import ProgressBoard, RunProgress
from workflows import WORKFLOWS_DIR

pytestmark = pytest.mark.timeout(600)

DOCUMENTS = 25


def small_corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for number in range(DOCUMENTS):
        (folder / f"note_{number:02}.md").write_text(
            f"# Note {number}\n\nThe event loop runs task {number} until it awaits.\n",
            encoding="utf-8",
        )
    return folder


def test_corpus_indexing_piped_prints_a_count_line_every_tenth(tmp_path: Path) -> None:
    folder = small_corpus(tmp_path)
    done = workbench(tmp_path / "ws", "corpus", "add", str(folder))
    assert done.returncode == 0, done.stderr
    counts = [
        (int(m.group(1)), int(m.group(2)))
        for m in re.finditer(
            rf"^indexing {re.escape(str(folder))}: (\d+)/(\d+)$", done.stdout, re.M
        )
    ]
    assert counts[0] == (0, DOCUMENTS) and counts[-1] == (DOCUMENTS, DOCUMENTS)
    assert [done for done, _ in counts] == sorted({done for done, _ in counts})
    assert len(counts) == 11, "one line at the start and one per tenth, the last at the end"
    assert f"{DOCUMENTS} added" in done.stdout


def screen_of(args: list[str], tmp_path: Path) -> str:
    """What a person sees once ``workbench ARGS`` has run to its end in a terminal."""
    term = spawn_workbench(args, terminal_env(tmp_path))
    try:
        term.child.expect(pexpect.EOF, timeout=PROCESS_S)
        term.stream.feed(term.child.before)
        return term.text()
    finally:
        term.close()


def test_corpus_indexing_in_a_terminal_draws_a_bar_with_counts(tmp_path: Path) -> None:
    folder = small_corpus(tmp_path)
    shown = screen_of(["--workspace", str(tmp_path / "ws"), "corpus", "add", str(folder)], tmp_path)
    [bar] = [line for line in shown.splitlines() if f"indexing {folder}" in line]
    assert f"{DOCUMENTS}/{DOCUMENTS}" in bar and "━" in bar, shown
    assert f"indexing {folder}: 0/{DOCUMENTS}" not in shown, "no plain lines in a terminal"


def test_a_headless_run_shows_steps_settled_as_a_bar_or_as_lines(tmp_path: Path) -> None:
    flow = str(WORKFLOWS_DIR / "fan_out.yaml")
    piped = workbench(tmp_path / "piped", "run", flow, "--headless")
    assert piped.returncode == 0, piped.stderr
    lines = re.findall(r"^fan_out steps settled: (\d+)/(\d+)", piped.stdout, re.M)
    assert lines[0] == ("0", "6") and lines[-1] == ("6", "6"), piped.stdout
    assert "fan_out steps settled: 6/6 (COMPLETED)" in piped.stdout

    shown = screen_of(["--workspace", str(tmp_path / "pty"), "run", flow, "--headless"], tmp_path)
    [bar] = [line for line in shown.splitlines() if "fan_out steps settled" in line]
    assert "6/6" in bar and "COMPLETED" in bar, shown


def test_research_rounds_count_up_to_the_rounds_allowed() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    events: list[RunEvent] = research_events("r", upto_round=3)
    started = events[0]
    events[0] = started.model_copy(update={"inputs": {**started.inputs, "max_rounds": 4}})
    with ProgressBoard(console) as board:
        RunProgress(board)(events)
    rounds = re.findall(r"^research rounds scored: (\d)/(\d) \((\w+)\)$", out.getvalue(), re.M)
    assert [(done, total) for done, total, _ in rounds] == [("1", "4"), ("2", "4"), ("3", "4")]
    assert "deep_research steps settled:" in out.getvalue()


def test_runs_show_json_is_one_object_with_steps_in_order_and_pending_prompts(
    tmp_path: Path,
) -> None:
    done = workbench(tmp_path, "run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless")
    waiting = workbench(
        tmp_path,
        "run",
        str(WORKFLOWS_DIR / "approval.yaml"),
        "--headless",
        "--on-interrupt",
        "wait",
    )
    assert (done.returncode, waiting.returncode) == (0, 4), waiting.stderr
    listed = json.loads(workbench(tmp_path, "runs", "list", "--json").stdout)
    by_workflow = {run["workflow"]: run["run_id"] for run in listed}

    shown = workbench(tmp_path, "runs", "show", by_workflow["fan_out"], "--json")
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    assert run["run_id"] == by_workflow["fan_out"] and run["status"] == "COMPLETED"
    assert run["engine"] and run["engine_reason"] and run["stopped"] is False
    assert [step["status"] for step in run["steps"]] == ["SUCCEEDED"] * 6
    assert run["pending"] == [] and "definition" not in run and "engine_state" not in run

    paused = json.loads(
        workbench(tmp_path, "runs", "show", by_workflow["approval"], "--json").stdout
    )
    assert paused["status"] == "WAITING"
    [prompt] = paused["pending"]
    assert prompt["step_id"] == "plan" and prompt["request"]["prompt"] == "Approve the plan?"
    assert "plan" in [step["step_id"] for step in paused["steps"]]

    unknown = workbench(tmp_path, "runs", "show", "no-such-run", "--json")
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.startswith("error: ") and len(unknown.stderr.splitlines()) == 1


def test_providers_json_names_why_a_breaker_is_open(tmp_path: Path) -> None:
    shown = workbench(tmp_path, "providers", "--json")
    assert shown.returncode == 0, shown.stderr
    providers = json.loads(shown.stdout)
    assert providers, "the built-in provider is always listed"
    for provider in providers:
        assert {
            "name",
            "kind",
            "state",
            "cooldown_remaining_s",
            "last_error",
            "last_error_status",
            "last_error_retry_after_s",
            "open_reason",
        } <= set(provider)
