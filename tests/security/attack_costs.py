"""What each input attack costs the `workbench` process, for this tree and for another one side by
side: exit code, wall and CPU seconds, peak memory (the kernel's accounting of the child).

    git archive <commit> | tar -x -C /tmp/before
    .venv/bin/python -m tests.security.attack_costs --before /tmp/before

Each tree runs with its own code first on ``PYTHONPATH`` (the same interpreter and packages).
Printed, never asserted: the tests (test_inputs.py) assert the outcome and a memory bound.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.security.costs import Ran, measured
from tests.security.test_inputs import LIST_WORKFLOW

PROJECT = Path(__file__).resolve().parents[2]
WORKBENCH = [sys.executable, "-m", "tui.cli"]


def _nested(levels: int) -> Callable[[Path], list[str]]:
    def command(folder: Path) -> list[str]:
        workflow = folder / "listing.yaml"
        workflow.write_text(LIST_WORKFLOW, encoding="utf-8")
        nested = "[" * levels + "]" * levels
        return ["run", str(workflow), "--headless", "--input", f"items={nested}"]

    return command


def _template(values: int) -> Callable[[Path], list[str]]:
    def command(folder: Path) -> list[str]:
        workflow = folder / "many.yaml"
        listed = ", ".join(str(n) for n in range(values))
        workflow.write_text(
            "name: many\ntemplates:\n  one:\n    params: [n]\n    steps:\n"
            "      - {id: 's{n}', uses: demo.echo}\n"
            f"steps:\n  - use: one\n    with: {{n: [{listed}]}}\n",
            encoding="utf-8",
        )
        return ["validate", str(workflow)]

    return command


ATTACKS: dict[str, Callable[[Path], list[str]]] = {
    "--input nested 200 levels (run)": _nested(200),
    "--input nested 50,000 levels (run)": _nested(50_000),
    "template with: 300,000 values (validate)": _template(300_000),
}


def cost(tree: Path, make: Callable[[Path], list[str]]) -> Ran:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        env = {**os.environ, "PYTHONPATH": str(tree), "WORKBENCH_HOME": str(workspace)}
        env["WORKBENCH_CONFIG"] = str(workspace / "no-config.yaml")
        return measured([*WORKBENCH, *make(workspace)], env=env, cwd=workspace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another tree of the project to compare")
    trees = {"now": PROJECT}
    before = parser.parse_args().before
    if before is not None:
        trees = {"before": before.resolve(), **trees}
    for attack, make in ATTACKS.items():
        sys.stdout.write(f"{attack}\n")
        for name, tree in trees.items():
            ran = cost(tree, make)
            last = (ran.stderr.strip().splitlines() or [""])[-1][:110]
            sys.stdout.write(f"  {name:<7} exit {ran.exit_code:<3} {ran.cost}  {last}\n")


if __name__ == "__main__":
    main()
