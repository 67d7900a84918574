"""A how-to question's evidence brief states the API that answers it (issue 22, item 4).

Reference text names its APIs in entries — a call opening a line (``stop_job(job) -- …``), a
member entry (``pool.drain: …``), a docstring under its function's heading — while the prose
around them talks about the same words without naming anything. The brief must quote the entry
and name its API, not only the prose about the module.
"""

from __future__ import annotations

from pathlib import Path

from engine.spec import WorkflowDefinition
from research.code_names import api_match, heading_api, opens_with_api
from research.extractive import claim_candidates
from tests.research.conftest import research_one_module

JOBS = '''"""Jobs: run work in the background and keep track of it.

A job runs a piece of work beside the program that started it, and a running job keeps
running until its work is done. The module keeps a table of the running jobs and reports when
each job comes to an end. Jobs that end with an error keep the error for whoever asks.

Many jobs can be running at once; a job that waits for another job does not stop the others.
A running job can be asked how far its work has come, and a job that has come to an end can be
asked for its result.

stop_job(job) -- ask a running job to stop and wait until it has come to an end.
"""


def start_job(work):
    """Start a background job that runs work and return it at once."""


def stop_job(job, timeout=None):
    """Ask a running job to stop, then wait until the job has come to an end.

    The job stops at its next checkpoint; timeout bounds the wait in seconds.
    """
'''


def test_api_entries_are_statements_and_name_what_they_document() -> None:
    entry = "pool.drain: Wait until every job of the pool has come to an end."
    assert opens_with_api(entry) and opens_with_api("stop_job(job) -- stop it and wait.")
    assert not opens_with_api("of the table, which the module keeps up to date.")
    assert claim_candidates({"text": f"Pools.\n\n{entry}"}) == [entry]
    assert heading_api("stop_job") == "stop_job" and heading_api("FileHandler") == "FileHandler"
    assert heading_api("Rationale") == "" and heading_api("How to teach this") == ""
    assert api_match("FileHandler.emit: Emit a record.", ["file", "log"]) == 0.5
    assert api_match("A handler that writes to a file.", ["file", "log"]) == 0.0
    assert api_match("Writes to disk files.", ["file", "log"], "FileHandler") == 0.5


def test_a_how_to_questions_brief_states_the_api_that_answers_it(
    workflow: WorkflowDefinition, tmp_path: Path
) -> None:
    run, report = research_one_module(
        workflow,
        tmp_path,
        "jobs",
        JOBS,
        "How do I stop a running job and wait for it to end?",
    )
    summary = report.split("## Summary", 1)[1].split("\n## ", 1)[0]
    answer = report.split("## How do I stop a running job", 1)[1].split("\n## ", 1)[0]
    assert "§ `stop_job`" in summary.strip().splitlines()[0]  # the lead names the API
    assert "stop_job(job) -- ask a running job to stop and wait" in answer  # the entry is quoted
