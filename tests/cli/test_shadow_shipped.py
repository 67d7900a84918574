"""`workbench run --engine shadow` agrees on every shipped workflow, through the real CLI.

Each workflow in workflows/ runs with its required inputs on both engines (the
second replaying the first's journal), prompts answered by the headless
defaults; the two runs must not differ. Each run keeps its own files: the
note governed_note saves is in each run's own folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from engine.store import RunStore
from research.corpus import Corpus
from research.default_corpus import build_default_corpus
from tui.cli import cli
from workflows import WORKFLOWS_DIR

SHIPPED = sorted(WORKFLOWS_DIR.glob("*.yaml"))
SAMPLE_VALUES = {"string": "what is a PEP", "int": 2, "float": 0.5, "bool": True}
"""A value for a required input of each type the shipped workflows declare."""


def required_inputs(path: Path) -> list[str]:
    """``--input`` arguments for every input ``path`` requires (those without a default)."""
    arguments: list[str] = []
    declared = yaml.safe_load(path.read_text(encoding="utf-8")).get("inputs") or {}
    for name, spec in declared.items():
        if spec.get("required") and spec.get("default") is None:
            arguments += ["--input", f"{name}={SAMPLE_VALUES[spec.get('type', 'string')]}"]
    return arguments


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose default collection is already built from Python's documentation
    topics alone (a fraction of a second, where the whole build takes half a minute): the
    engines must agree whatever the corpus holds."""
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        build_default_corpus(corpus, stdlib=tmp_path / "no-stdlib")
    return tmp_path


def run_in_shadow(workspace: Path, path: Path) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli,
        [
            "--workspace",
            str(workspace),
            "run",
            str(path),
            "--engine",
            "shadow",
            "--headless",
            "--on-interrupt",
            "default",
            *required_inputs(path),
        ],
    )
    return result.exit_code, result.output


def test_the_shipped_workflows_are_all_here() -> None:
    assert {p.stem for p in SHIPPED} >= {"deep_research", "governed_note", "research_assistant"}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_a_shadow_run_of_a_shipped_workflow_reports_no_difference(
    workspace: Path, path: Path
) -> None:
    code, output = run_in_shadow(workspace, path)
    assert code == 0, output
    assert "identical" in output.split("shadow:", 1)[-1], output


def test_each_run_of_a_shadow_run_saves_its_note_in_its_own_folder(workspace: Path) -> None:
    code, output = run_in_shadow(workspace, WORKFLOWS_DIR / "governed_note.yaml")
    assert code == 0, output
    with RunStore(workspace / "runs.sqlite") as store:
        runs = store.list_runs()
        assert len(runs) == 2
        for run in runs:
            saved = store.get_run(run.run_id).outputs["note"]
            assert saved == str(workspace / "runs" / run.run_id / "note.md")
            assert Path(saved).read_text(encoding="utf-8").strip() == "what is a PEP"
