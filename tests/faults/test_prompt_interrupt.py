"""Ctrl-C at the terminal prompt of `workbench run --on-interrupt ask`, in a real terminal.

The answer was read by a thread blocked in ``read`` on the terminal. Under load, about one
Ctrl-C in ten at that prompt did nothing at all: no SIGINT reached the process (its handler
never ran, nothing was echoed, and a later Enter read an empty line), so the run waited on.
Every such hang had the prompt written while the live progress bars were still being taken
down. The answer is now read on the event loop (``tui.commands.common.read_line``), with no
thread on the terminal; 70 of 70 runs under two busy loops ended at once.
"""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from tests.faults.processes import PROJECT, argv, environment
from tests.faults.workspace import Template, assert_intact, copy_template, new_runs

APPROVAL = PROJECT / "workflows" / "approval.yaml"
ENDS_WITHIN_S = 120
"""Only a hang reaches this: the process ends at once after Ctrl-C."""
PROMPT_END = r"answer \(approve / reject / edit\) \[approve\]: "
"""The whole prompt: printed on the event loop just before it waits for the line, long after
``asyncio.run`` installed the SIGINT handler that turns Ctrl-C into the run's interruption."""


@pytest.mark.timeout(600)
def test_ctrl_c_at_the_prompt_ends_the_run_stored_and_the_process(
    template: Template, tmp_path: Path
) -> None:
    workspace = copy_template(template, tmp_path / "ws")
    command = argv(workspace, ["run", str(APPROVAL), "--headless", "--on-interrupt", "ask"])
    child = pexpect.spawn(
        command[0],
        command[1:],
        cwd=str(PROJECT),
        env=environment(),
        encoding="utf-8",
        dimensions=(40, 200),
        timeout=ENDS_WITHIN_S,
    )
    try:
        child.expect(PROMPT_END)
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    printed = child.before
    assert child.exitstatus == 5, printed
    assert (
        "interrupted: the run is stored, CANCELLED; see what it did with workbench runs show"
        in printed
    )
    assert "Traceback" not in printed
    assert "Fatal Python error" not in printed  # nothing was left reading the terminal
    assert_intact(workspace, template)
    assert list(new_runs(workspace, template).values()) == ["CANCELLED"]
