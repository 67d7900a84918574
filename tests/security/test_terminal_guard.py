"""The app's last line of defence (tui/app/terminal_guard.py): whatever a widget holds, no
character a terminal acts on is in the lines the compositor writes, and each line keeps the
width it was laid out with.

The other app tests show that every surface that reads text from outside cleans it visibly;
this one puts the raw payload straight into widgets — as a surface that forgot to clean would —
in the real app (Pilot), and reads the lines Textual renders for the terminal.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.geometry import Region
from textual.widget import Widget
from textual.widgets import OptionList, Static, TextArea

from tests.security.conftest import MARKUP, PAYLOAD, acted_on
from tests.tui.pilot_wait import until
from tui.app.app import WorkbenchApp
from tui.app.screens.home import HomeScreen
from tui.launch.workbench import Workbench

SIZE = (120, 40)


def rendered(widget: Widget) -> tuple[str, list[int]]:
    """The text of every line ``widget`` renders for the terminal, and each line's width."""
    lines = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    text = "\n".join(
        "".join(segment.text for segment in line if not segment.control) for line in lines
    )
    return text, [line.cell_length for line in lines]


async def test_raw_text_in_any_widget_reaches_the_terminal_without_its_codes(
    tmp_path: Path,
) -> None:
    app = WorkbenchApp(Workbench(workspace=tmp_path, shipped_dir=tmp_path))
    hostile = f"{PAYLOAD} {MARKUP}"
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, HomeScreen))
        widgets: list[Widget] = [
            Static(hostile, markup=False),
            TextArea(hostile),
            OptionList(Text(hostile), Text(f"second {PAYLOAD}")),
        ]
        await app.screen.mount_all(widgets)
        await until(pilot, lambda: all(widget.size.width for widget in widgets))
        for widget in widgets:
            text, widths = rendered(widget)
            surface = type(widget).__name__
            assert "SEC-CLIP" in text and "SEC-TITLE" in text, f"{surface}: the words are shown"
            assert not [char for char in text if acted_on(char)], f"{surface}: {text!r}"
            assert set(widths) == {widget.size.width}, f"{surface}: a line lost its layout"
