"""Ctrl-C at the terminal prompt of `workbench run --on-interrupt ask`, in a real terminal.

The answer used to be read in ``asyncio.to_thread``: ``asyncio.run`` joins its executor's threads
on the way out, so after Ctrl-C the process hung until the person pressed Enter.
"""

from __future__ import annotations

from pathlib import Path

import pexpect
import pytest

from tests.faults.processes import PROJECT, argv, environment

APPROVAL = PROJECT / "workflows" / "approval.yaml"
ENDS_WITHIN_S = 120
"""Only a hang reaches this: the process ends at once after Ctrl-C."""


@pytest.mark.timeout(300)
def test_ctrl_c_at_the_prompt_ends_the_run_stored_and_the_process(tmp_path: Path) -> None:
    command = argv(tmp_path / "ws", ["run", str(APPROVAL), "--headless", "--on-interrupt", "ask"])
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
        child.expect(r"answer \(")  # the prompt is on screen and reading the terminal
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 5, child.before
    assert "interrupted: the run is stored; continue it with workbench resume" in child.before
