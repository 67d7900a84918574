"""No control sequence from outside reaches a terminal: every surface, the real `workbench` in a
real pseudo-terminal (pexpect), its bytes searched for the raw attacks of the payload and its
screen (pyte) read for the same attacks shown as text.

Command surfaces: a headless run (its live lines, the prompt it asks on the terminal, its final
table), ``runs show`` (on a terminal and piped; ``--json`` stays exact), ``runs list``,
``validate``'s errors (a hostile file name and hostile values), ``corpus add`` and
``corpus search``. App surfaces: the run screen with its event log, a step's detail, the report
screen, a prompt, Home (workflow files, recent runs) and the history. Reports on disk: see
test_report_markdown.py.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pyte
import pytest

from tests.security.conftest import (
    MARKUP,
    PAYLOAD,
    Written,
    asking_workflow,
    assert_no_raw_payload,
    assert_payload_shown,
    hostile_workflow,
    in_terminal,
    piped,
    run_id_of,
)
from tests.tui.terminal import (
    COLUMNS,
    E2E_TIMEOUT_S,
    ENTER,
    PROCESS_S,
    ROWS,
    WORKBENCH,
    Terminal,
    spawn_workbench,
    terminal_env,
)

pytestmark = pytest.mark.timeout(E2E_TIMEOUT_S)

ESCAPE = "\x1b"
CTRL_Y = "\x19"
FAILED, WAITING = 1, 4
"""`workbench run`'s exit codes for a FAILED and a WAITING run."""


def screen_of(written: Written) -> str:
    """What a person reads of a command's output: its bytes played on a terminal as wide as the
    pseudo-terminal and tall enough to keep every line."""
    screen = pyte.Screen(COLUMNS, 2000)
    pyte.ByteStream(screen).feed(written.output)
    return "\n".join(line.rstrip() for line in screen.display).strip()


@pytest.fixture
def failed_run(tmp_path: Path) -> tuple[Path, str]:
    """A workspace holding one FAILED run of the hostile workflow: (workspace, run id)."""
    stored = piped(tmp_path, "run", str(hostile_workflow(tmp_path)), "--headless")
    assert stored.exit_code == FAILED, stored.text
    return tmp_path, run_id_of(tmp_path)


# -- the commands -------------------------------------------------------------------------


def test_a_headless_run_shows_the_hostile_workflow_s_words_and_sends_none_of_its_codes(
    tmp_path: Path,
) -> None:
    written = in_terminal(tmp_path, "run", str(hostile_workflow(tmp_path)), "--headless")
    assert written.exit_code == FAILED
    assert_no_raw_payload(written.output, "run --headless")
    assert_payload_shown(screen_of(written), "run --headless")


def test_a_prompt_asked_on_the_terminal_shows_the_workflow_s_words(tmp_path: Path) -> None:
    child = pexpect.spawn(
        WORKBENCH,
        ["--workspace", str(tmp_path), "run", str(asking_workflow(tmp_path)), "--headless"],
        cwd=str(tmp_path),
        env=terminal_env(tmp_path),
        dimensions=(ROWS, COLUMNS),
        timeout=PROCESS_S,
    )
    child.logfile_read = io.BytesIO()
    child.expect(r"answer \(approve")  # the question it asks: wait for it before answering
    child.sendline("approve")
    child.expect(pexpect.EOF)
    child.close()
    written = Written(child.logfile_read.getvalue(), child.exitstatus or 0)
    assert written.exit_code == 0, written.text
    assert_no_raw_payload(written.output, "run --on-interrupt ask")
    assert_payload_shown(screen_of(written), "run --on-interrupt ask")


def test_runs_show_on_a_terminal_and_piped(failed_run: tuple[Path, str]) -> None:
    workspace, run_id = failed_run
    for written, how in (
        (in_terminal(workspace, "runs", "show", run_id), "runs show"),
        (piped(workspace, "runs", "show", run_id), "runs show | cat"),
    ):
        assert written.exit_code == 0, written.text
        assert_no_raw_payload(written.output, how)
        assert_payload_shown(screen_of(written), how)


def test_runs_list(failed_run: tuple[Path, str]) -> None:
    workspace, _ = failed_run
    listed = in_terminal(workspace, "runs", "list")
    assert_no_raw_payload(listed.output, "runs list")
    assert "SEC-CLIP␛]52" in screen_of(listed), "the run's reason is listed, the payload shown"


def test_json_on_stdout_is_the_stored_value_exactly_with_nothing_raw(
    failed_run: tuple[Path, str],
) -> None:
    """`runs export` and `runs show --json`: a script reads the exact value, a terminal shows
    JSON escapes."""
    workspace, run_id = failed_run
    exported = in_terminal(workspace, "runs", "export", run_id)
    assert_no_raw_payload(exported.output, "runs export")
    events = [json.loads(line) for line in exported.output.splitlines()]
    assert any(event.get("error", "").endswith(f"{PAYLOAD} {MARKUP}") for event in events)
    shown = in_terminal(workspace, "runs", "show", run_id, "--json")
    assert_no_raw_payload(shown.output, "runs show --json")
    assert json.loads(shown.output)["inputs"]["topic"] == f"{PAYLOAD} {MARKUP}"


def test_validate_names_a_hostile_file_and_its_values_without_their_codes(tmp_path: Path) -> None:
    payload = json.dumps(PAYLOAD)
    path = tmp_path / f"bad {PAYLOAD}.yaml"
    path.write_text(
        f"name: bad\nsteps:\n  - id: a\n    uses: demo.echo\n    depends_on: [{payload}]\n",
        encoding="utf-8",
    )
    written = in_terminal(tmp_path, "validate", path.name)
    assert written.exit_code == 1
    assert_no_raw_payload(written.output, "validate")
    shown = screen_of(written)
    assert_payload_shown(shown, "validate")
    assert shown.startswith("bad SEC-CLIP␛]52;c;"), "the file is named, its name shown"


def test_corpus_add_and_search_show_a_hostile_document_s_name_and_words(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / f"notes {PAYLOAD}.md").write_text(
        f"# Scheduling {PAYLOAD}\n\nThe event loop schedules callbacks. {PAYLOAD}\n",
        encoding="utf-8",
    )
    (folder / f"broken {PAYLOAD}.pdf").write_bytes(b"not a pdf")
    added = in_terminal(tmp_path, "corpus", "add", str(folder))
    assert added.exit_code == 0, added.text
    assert_no_raw_payload(added.output, "corpus add")
    assert_payload_shown(screen_of(added), "corpus add (a skipped file's name)")
    found = in_terminal(tmp_path, "corpus", "search", "scheduling")
    assert found.exit_code == 0, found.text
    assert_no_raw_payload(found.output, "corpus search")
    assert_payload_shown(screen_of(found), "corpus search")


# -- the app ------------------------------------------------------------------------------


class Recorded(Terminal):
    """The app in a pseudo-terminal, every byte it writes kept (``written``) beside the screen."""

    def __init__(self, child: pexpect.spawn) -> None:
        super().__init__(child)
        self.log = io.BytesIO()
        child.logfile_read = self.log
        self._checked = 0

    def written_since_last_check(self) -> bytes:
        data = self.log.getvalue()
        new, self._checked = data[self._checked :], len(data)
        return new

    def check(self, surface: str, *, shown: bool = True) -> None:
        """Nothing raw written since the last check; every attack on screen as text."""
        assert_no_raw_payload(self.written_since_last_check(), surface)
        if shown:
            assert_payload_shown(self.text(), surface)
        else:
            assert "SEC-CLIP␛]52;c;" in self.text(), f"{surface}: the payload is not shown"


AppStarter = Callable[..., Recorded]


@pytest.fixture
def app_on(tmp_path: Path) -> Iterator[AppStarter]:
    """Start the app with the given arguments (call it once); closed at the end of the test."""
    started: list[Recorded] = []

    def start(workspace: Path, *args: str) -> Recorded:
        child = spawn_workbench(
            ["--workspace", str(workspace), *args], terminal_env(tmp_path)
        ).child
        started.append(Recorded(child))
        return started[-1]

    yield start
    for term in started:
        term.close()


def test_the_run_screen_step_detail_and_report_of_a_hostile_run(
    failed_run: tuple[Path, str], app_on: AppStarter
) -> None:
    workspace, run_id = failed_run
    folder = workspace / "runs" / run_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.md").write_text(
        f"# Report {PAYLOAD}\n\nA finding. {PAYLOAD}\n", encoding="utf-8"
    )
    term = app_on(workspace, "app", "--run", run_id)
    term.wait_for("boom failed: DemoFailure: SEC-CLIP")
    term.check("the run screen and its event log", shown=False)
    term.press(ENTER, lambda: "error: DemoFailure" in term.text(), "the step detail opening")
    term.check("the step detail")
    term.press(ESCAPE, lambda: "error: DemoFailure" not in term.text(), "the detail closing")
    term.press("r", lambda: "report · " in term.text(), "the report opening")
    term.wait_for("A finding.")
    term.check("the report screen")
    term.quit()


def test_a_prompt_in_the_app_shows_the_workflow_s_words(tmp_path: Path, app_on: AppStarter) -> None:
    stored = piped(tmp_path, "run", str(asking_workflow(tmp_path)), "--headless")
    assert stored.exit_code == WAITING, stored.text
    term = app_on(tmp_path, "app", "--run", run_id_of(tmp_path))
    term.wait_for("SEC-CLIP")
    term.check("the approval prompt")
    term.quit()


def test_home_and_the_history_list_hostile_files_and_runs(
    failed_run: tuple[Path, str], app_on: AppStarter
) -> None:
    workspace, _ = failed_run
    workflows = workspace / "workflows"
    workflows.mkdir()
    shutil.copy(workspace / "hostile.yaml", workflows / "hostile.yaml")
    (workflows / f"broken {PAYLOAD}.yaml").write_text("name: [", encoding="utf-8")
    term = app_on(workspace)
    term.until(
        lambda: term.on_home() and "loading workflows" not in term.text(), "Home's lists loading"
    )
    term.check("Home: workflow files and recent runs", shown=False)
    assert "broken SEC-CLIP␛]52;c;" in term.text(), "the broken file is listed by its name"
    term.press(CTRL_Y, lambda: "run history" in term.text(), "the history opening")
    term.check("the run history", shown=False)
    term.quit()
