"""A workflow whose constant input is too costly to evaluate (issue 27) is refused in one
line and the workspace's other workflows are listed beside it: what Home's worker loads
(``Workbench.workflows``). Before the cost limit, loading that file never ended, and Home
showed "loading workflows…" with nothing listed."""

from __future__ import annotations

from pathlib import Path

from engine.cel_budget import MAX_EVALUATION_STEPS
from tui.launch.workbench import Workbench

DIGITS = "[0,1,2,3,4,5,6,7,8,9]"


def test_home_lists_the_other_workflows_beside_a_costly_one(tmp_path: Path) -> None:
    inner = "1"
    for variable in "abcdef":
        inner = f"{DIGITS}.map({variable}, {inner})"
    workflows = tmp_path / "workflows"
    workflows.mkdir()
    (workflows / "a_costly.yaml").write_text(
        f'name: costly\nsteps:\n  - {{id: s, uses: demo.echo, inputs: {{n: "size({inner})"}}}}\n',
        encoding="utf-8",
    )
    (workflows / "b_fine.yaml").write_text(
        "name: fine\nsteps:\n  - {id: s, uses: demo.echo}\n", encoding="utf-8"
    )

    entries = Workbench(workspace=tmp_path, shipped_dir=tmp_path / "none").workflows()

    assert [(e.name, e.definition is None) for e in entries] == [
        ("a_costly", True),
        ("fine", False),
    ]
    assert f"stopped after {MAX_EVALUATION_STEPS:,} evaluation steps" in entries[0].error
    assert "\n" not in entries[0].error
