"""docs/app.md lists every key of every screen as the app binds it: the tables under
``## Keys`` are checked against the bindings here, so the page cannot drift from the app."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from tui.app.app import WorkbenchApp
from tui.app.screens.fork import ForkScreen
from tui.app.screens.history import HistoryScreen
from tui.app.screens.home import HomeScreen
from tui.app.screens.provider_detail import ProviderDetailScreen
from tui.app.screens.report import ReportScreen
from tui.app.screens.round_diff import RoundDiffScreen
from tui.app.screens.run import RunScreen
from tui.app.screens.step_detail import StepDetailScreen
from tui.app.widgets.dag_view import DagView
from tui.app.widgets.plan_editor import PlanList
from tui.app.widgets.prompts import ApprovalPrompt, TargetList, TieBreakPrompt
from tui.app.widgets.providers_panel import ProvidersPanel
from tui.app.widgets.timeline import Timeline

DOC = Path(__file__).resolve().parents[2] / "docs" / "app.md"
SCREENS: dict[str, tuple[type, ...]] = {
    "Everywhere": (WorkbenchApp,),
    "Home": (HomeScreen,),
    "Run history": (HistoryScreen,),
    "Run": (RunScreen,),
    "Workflow graph": (DagView,),
    "Providers panel": (ProvidersPanel,),
    "Replay timeline": (Timeline,),
    "Step detail": (StepDetailScreen,),
    "Provider detail": (ProviderDetailScreen,),
    "Round diff": (RoundDiffScreen,),
    "Report": (ReportScreen,),
    "Approval prompt": (ApprovalPrompt, PlanList),
    "Tie-breaker prompt": (TieBreakPrompt, TargetList),
    "Fork": (ForkScreen,),
}
"""Each heading of the page's key tables and the classes whose bindings it lists."""
NAMES = {
    "escape": "Esc",
    "enter": "Enter",
    "slash": "/",
    "question_mark": "?",
    "comma": ",",
    "full_stop": ".",
    "plus": "+",
    "equals_sign": "=",
    "minus": "-",
    "delete": "Delete",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "pageup": "PageUp",
    "pagedown": "PageDown",
}


def key_name(key: str) -> str:
    """A key as the page writes it: ``ctrl+s`` is ``Ctrl+S``, ``question_mark`` is ``?``."""
    parts = key.split("+")
    *mods, last = parts
    shown = NAMES.get(last, last.upper() if len(last) == 1 and mods else last.capitalize())
    if len(last) == 1 and not mods:
        shown = last
    return "+".join([*(m.capitalize() for m in mods), shown])


def key_rows(classes: tuple[type, ...]) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for cls in classes:
        for binding in cls.BINDINGS:
            assert isinstance(binding, Binding)
            keys = " / ".join(key_name(k.strip()) for k in binding.key.split(","))
            rows.append((keys, binding.description or binding.action))
    return rows


def doc_rows(heading: str) -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = re.search(rf"^### {re.escape(heading)}\n(.*?)(?=^#|\Z)", text, re.M | re.S)
    assert section, f"docs/app.md has no '### {heading}' key table"
    return [
        (m.group(1), m.group(2))
        for m in re.finditer(r"^\| `([^`]+)` \| (.+?) \|$", section.group(1), re.M)
    ]


def test_every_key_table_lists_the_screens_bindings() -> None:
    for heading, classes in SCREENS.items():
        assert doc_rows(heading) == key_rows(classes), heading
