"""Inputs checked before a run exists, and files that stay inside the workspace.

- a deeply nested ``--input`` is one line and exit 2 before anything is stored (it was exit 70
  after the run was stored, leaving it RUNNING with its process gone; 50,000 levels a
  RecursionError); the app's form says the same line and starts nothing;
- a ``with:`` list of a template asking for more steps than templates may make is one line
  naming the file and line, never a minute and gigabytes of expansion;
- a symbolic link planted where a run writes its report is replaced, never written through;
- a key is never sent in clear over http to another machine unless the config says so.

Each attack's cost (peak memory of the refused process) is measured from the kernel's accounting
of that child and bounded far below what it cost before; time is reported, never asserted.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from plumbing.folder_writes import LinkRefused, write_text_into
from tests.security.conftest import piped, run_id_of
from tests.security.costs import measured
from tests.tui.pilot_wait import press, until
from tests.tui.terminal import PROCESS_S, WORKBENCH, terminal_env
from tui.app.app import WorkbenchApp
from tui.app.screens.home import HomeScreen
from tui.app.widgets.find_bar import plain_text
from tui.launch.workbench import Workbench

pytestmark = pytest.mark.timeout(PROCESS_S)

BAD_INPUT = 2
LIST_WORKFLOW = (
    "name: listing\n"
    "inputs:\n"
    "  items: {type: list, default: []}\n"
    "steps:\n"
    "  - id: show\n"
    "    uses: demo.echo\n"
    '    inputs: {items: "inputs.items"}\n'
)


def stored_runs(workspace: Path) -> int:
    database = workspace / "runs.sqlite"
    if not database.exists():
        return 0
    with sqlite3.connect(database) as connection:
        [(count,)] = connection.execute("SELECT count(*) FROM runs").fetchall()
    return int(count)


@pytest.mark.parametrize("levels", [200, 50_000])
def test_a_deeply_nested_input_is_refused_before_a_run_is_stored(
    tmp_path: Path, levels: int
) -> None:
    workflow = tmp_path / "listing.yaml"
    workflow.write_text(LIST_WORKFLOW, encoding="utf-8")
    nested = "[" * levels + "]" * levels
    ran = measured(
        [WORKBENCH, "--workspace", str(tmp_path), "run", str(workflow), "--headless"]
        + ["--input", f"items={nested}"],
        env=terminal_env(tmp_path),
        cwd=tmp_path,
    )
    assert (ran.exit_code, ran.stderr.strip()) == (
        BAD_INPUT,
        f"error: input 'items' nests {levels} levels deep; an input may nest 40 — flatten it",
    )
    assert stored_runs(tmp_path) == 0
    assert ran.cost.peak_mb < 300, ran.cost


def test_an_input_too_long_is_refused_and_a_fork_s_input_too(tmp_path: Path) -> None:
    workflow = tmp_path / "listing.yaml"
    workflow.write_text(LIST_WORKFLOW, encoding="utf-8")
    done = piped(tmp_path, "run", str(workflow), "--headless")
    assert done.exit_code == 0, done.text
    run_id = run_id_of(tmp_path)
    deep = "[" * 100 + "]" * 100
    forked = piped(tmp_path, "runs", "fork", run_id, "--at", "show", "--input", f"items={deep}")
    assert forked.exit_code == BAD_INPUT, forked.text
    assert "input 'items' nests 100 levels deep; an input may nest 40" in forked.text
    assert stored_runs(tmp_path) == 1


def test_a_template_asking_for_too_many_steps_is_one_line_naming_the_file(
    tmp_path: Path,
) -> None:
    values = ", ".join(str(n) for n in range(30_000))
    workflow = tmp_path / "many.yaml"
    workflow.write_text(
        "name: many\n"
        "templates:\n"
        "  one:\n"
        "    params: [n]\n"
        "    steps:\n"
        "      - {id: 's{n}', uses: demo.echo}\n"
        "steps:\n"
        f"  - use: one\n    with: {{n: [{values}]}}\n",
        encoding="utf-8",
    )
    ran = measured([WORKBENCH, "validate", str(workflow)], env=terminal_env(tmp_path), cwd=tmp_path)
    assert (ran.exit_code, ran.stderr.strip()) == (
        1,
        f"{workflow}:9:11: with: 30,000 instances of template 'one' would make more steps than"
        " the 1,000 templates may make in one workflow; give fewer values",
    )
    assert ran.cost.peak_mb < 300, ran.cost


def test_a_link_planted_at_a_run_s_report_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    """A research run waits for its plan's approval; meanwhile report.md in its folder becomes a
    link to a file outside the workspace; resuming writes the report in the folder."""
    workspace, outside = tmp_path / "workspace", tmp_path / "outside.txt"
    outside.write_text("precious\n", encoding="utf-8")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "loop.md").write_text(
        "# The event loop\n\nThe event loop runs ready callbacks in order.\n", encoding="utf-8"
    )
    workspace.mkdir()
    waiting = piped(
        workspace,
        "research",
        "How does the event loop run callbacks?",
        "--corpus",
        str(docs),
        "--headless",
        "--on-interrupt",
        "wait",
    )
    assert waiting.exit_code == 4, waiting.text
    run_id = run_id_of(workspace)
    folder = workspace / "runs" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").symlink_to(outside)
    resumed = piped(workspace, "resume", run_id, "--on-interrupt", "default")
    assert resumed.exit_code == 0, resumed.text
    assert outside.read_text(encoding="utf-8") == "precious\n"
    report = folder / "report.md"
    assert not report.is_symlink() and report.read_text(encoding="utf-8").startswith("# ")


def test_writes_into_a_folder_follow_no_link(tmp_path: Path) -> None:
    folder, outside = tmp_path / "run", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "target.md").write_text("precious", encoding="utf-8")
    (folder / "report.md").symlink_to(outside / "target.md")
    write_text_into(folder, "report.md", "the report")
    assert (outside / "target.md").read_text(encoding="utf-8") == "precious"
    assert (folder / "report.md").read_text(encoding="utf-8") == "the report"
    linked = tmp_path / "linked-run"
    linked.symlink_to(outside, target_is_directory=True)
    with pytest.raises(LinkRefused, match="linked-run is a symbolic link"):
        write_text_into(linked, "report.md", "the report")
    assert sorted(os.listdir(outside)) == ["target.md"]
    assert sorted(os.listdir(folder)) == ["report.md"], "no temporary file is left behind"


CONFIG = (
    "router:\n"
    "  providers:\n"
    "    - name: lan\n"
    "      kind: openai\n"
    "      model: some-model\n"
    "      base_url: {url}\n"
    "{extra}"
)


def test_a_key_over_plain_http_to_another_machine_is_refused_unless_allowed(
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.yaml"

    def providers(url: str, extra: str = "") -> tuple[int, str]:
        config.write_text(CONFIG.format(url=url, extra=extra), encoding="utf-8")
        done = piped(tmp_path, "--config", str(config), "providers", "--json")
        return done.exit_code, done.text.strip()

    assert providers("http://10.1.2.3:8000/v1") == (
        BAD_INPUT,
        f"error: {config}:3: router.providers[0]: provider 'lan' would send its key"
        " ($OPENAI_API_KEY) in clear over http to 10.1.2.3; use https, or set"
        " allow_insecure_http: true for a network you trust",
    )
    allowed = "      allow_insecure_http: true\n"
    for url, extra in [
        ("http://10.1.2.3:8000/v1", allowed),
        ("http://127.0.0.1:8000/v1", ""),
        ("http://localhost:8000/v1", ""),
        ("https://10.1.2.3:8000/v1", ""),
    ]:
        code, text = providers(url, extra)
        assert code == 0, f"{url} {extra.strip()}: {text}"


async def test_the_app_s_form_refuses_a_deep_input_in_one_line_and_starts_nothing(
    tmp_path: Path,
) -> None:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "listing.yaml").write_text(LIST_WORKFLOW, encoding="utf-8")
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=shipped))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen) and app.screen.ready)
        home = app.screen
        assert isinstance(home, HomeScreen)
        await until(pilot, lambda: "items" in home.fields)
        field = home.fields["items"]
        assert isinstance(field, Input)
        field.value = "[" * 200 + "]" * 200
        error = home.query_one("#form-error", Static)
        await press(pilot, "ctrl+s", lambda: "nests" in plain_text(error))
        assert (
            plain_text(error)
            == "input 'items' nests 200 levels deep; an input may nest 40 — flatten it"
        )
        assert isinstance(app.screen, HomeScreen), "no run screen opened"
    assert stored_runs(tmp_path) == 0
