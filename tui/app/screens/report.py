"""The final report (Markdown) beside its quality metadata; search it, copy it (or one section
of it) or save it.

Copy uses OSC 52 (``App.copy_to_clipboard``), which many terminals honour and
some ignore silently, so saving to a file is always offered next to it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Markdown, Static
from textual.widgets.markdown import MarkdownBlock

from plumbing.folder_writes import write_text_into
from plumbing.untrusted_text import for_terminal
from plumbing.workspace import RunFolder
from tui.app.plain_values import label, plain_value
from tui.app.report_sections import section_at
from tui.app.run_state import RunView
from tui.app.widgets.find_bar import FindBar, plain_text
from tui.app.widgets.key_footer import KeyFooter
from tui.present.quality_file import read_quality
from tui.present.untrusted import for_display

if TYPE_CHECKING:
    from tui.launch.workbench import Workbench

LINK_SHOWN = 200
"""Characters of a clicked link's address its notice shows at most."""


def load_report(folder: Path, view: RunView) -> tuple[str, dict[str, Any]]:
    """(markdown, quality metadata) from the run folder, else from the run's outputs."""
    files = RunFolder(folder)
    report_path, quality_path = files.report, files.quality
    text = report_path.read_text(encoding="utf-8") if report_path.is_file() else ""
    if not text:
        value = view.outputs.get("report")
        text = value if isinstance(value, str) else ""
    quality = read_quality(quality_path)
    if not quality and view.coalesced:
        quality = view.coalesced.model_dump(mode="json")
    return text, quality


def quality_table(quality: dict[str, Any]) -> Table:
    table = Table(box=None, show_header=False, expand=True, pad_edge=False)
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("value")
    for key, value in quality.items():
        table.add_row(label(key), plain_value(value))
    if not quality:
        table.add_row("quality", "no quality metadata for this run")
    return table


class ReportScreen(Screen[None]):
    CSS_PATH = "report.tcss"
    HELP = """
## Report

The run's final report with its quality metadata (confidence level, best CI,
the selected round, failing and passing metrics, why research stopped).
**/** or **^F** searches the report (Enter: next match, Escape closes the search).
**x** copies the section you are reading — the one holding the current match, else
the one at the top of the view; **c** copies the whole Markdown; **i** the run id
(all by OSC 52); **s** saves the report to a file.
"""
    BINDINGS = [
        Binding("escape", "back", "Back", id="report.back"),
        Binding("slash,ctrl+f", "find", "Search", id="report.find"),
        Binding("x", "copy_section", "Copy section", id="report.copy_section"),
        Binding("c", "copy", "Copy all", id="report.copy"),
        Binding("i", "copy_run_id", "Copy run id", id="report.copy_run_id"),
        Binding("s", "save", "Save", id="report.save"),
    ]

    def __init__(self, workbench: Workbench, run_id: str, view: RunView) -> None:
        super().__init__()
        self.workbench = workbench
        self.run_id = run_id
        self.text, self.quality = for_display(load_report(workbench.run_folder(run_id), view))

    def compose(self) -> ComposeResult:
        yield Static(f" report · {self.run_id}", id="report-title")
        with Horizontal():
            with VerticalScroll(id="report-body"):
                yield Markdown(
                    self.text or "*This run has no report yet.*",
                    id="report-markdown",
                    open_links=False,
                )
            yield Static(quality_table(self.quality), id="report-quality")
        yield FindBar(self._searchable, id="report-find")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#report-body").focus()

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        """A report makes no link of its own: one in it came from a document or a model (a
        report written before their Markdown was escaped), so it is named, never opened."""
        shown = for_terminal(event.href, one_line=True)
        shown = shown if len(shown) <= LINK_SHOWN else f"{shown[: LINK_SHOWN - 1]}…"
        self.notify(f"not opened: {shown} (a link from a document the report quotes)", markup=False)

    def _blocks(self) -> list[MarkdownBlock]:
        """The report's innermost blocks (paragraphs, list items' text, headings), in order."""
        markdown = self.query_one("#report-markdown", Markdown)
        return [block for block in markdown.query(MarkdownBlock) if not block.query(MarkdownBlock)]

    def _searchable(self) -> list[tuple[Widget, str]]:
        return [(block, plain_text(block)) for block in self._blocks()]

    def action_find(self) -> None:
        self.query_one(FindBar).open()

    def action_back(self) -> None:
        bar = self.query_one(FindBar)
        if bar.is_open:
            bar.close()
            self.query_one("#report-body").focus()
            return
        self.app.pop_screen()

    def _reading_line(self) -> int:
        """The report line the reader is at: the current match's, else the top of the view's."""
        hit = self.query_one(FindBar).current_hit
        if isinstance(hit, MarkdownBlock):
            return hit.source_range[0]
        top = self.query_one("#report-body").content_region.y
        for block in self._blocks():
            if block.region.bottom > top:
                return block.source_range[0]
        return 0

    def action_copy_section(self) -> None:
        section = section_at(self.text, self._reading_line())
        if section is None:
            self.action_copy()
            return
        self.app.copy_to_clipboard(section.text)
        self.notify(f"section '{section.title}' copied (OSC 52)")

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("report copied (OSC 52); if your terminal ignores it, press s to save a file")

    def action_copy_run_id(self) -> None:
        self.app.copy_to_clipboard(self.run_id)
        self.notify(f"run id {self.run_id} copied (OSC 52)")

    def action_save(self) -> None:
        target = self.workbench.files.exports / f"{self.run_id}-report.md"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_into(target.parent, target.name, self.text)
        except OSError as exc:
            self.notify(
                f"cannot write {target}: {exc.strerror}; check the workspace permissions",
                severity="error",
            )
            return
        self.notify(f"saved {target}")
