"""The run screen's header line: what the run is doing, as its events say, most important
first (a narrow terminal cuts the end of the line); before the first event, the seconds waited
and what is being opened.

Plain rich text from a :class:`~tui.app.run_state.RunView`: the screen hands in its theme's
styles (:class:`HeaderStyles`), so the header never names a colour.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.console import RenderableType
from rich.progress_bar import ProgressBar
from rich.style import Style
from rich.table import Table
from rich.text import Text

from tui.app.run_state import RunView, spend_text
from tui.app.status_style import StatusStyler
from tui.present.status_tone import Tone
from tui.present.untrusted import for_display

PROGRESS_WIDTH = 30
STARTING_WHAT = (
    "opening the run store, the corpus (indexed on first use) and the providers; "
    "the graph appears with the run's first event"
)


@dataclass(frozen=True)
class HeaderStyles:
    """The screen's theme: a status word's style and a tone's."""

    status: StatusStyler
    tone: Callable[[Tone], Style | str]


def starting_line(
    waited: float, counts: tuple[str, int, int] | None, styles: HeaderStyles
) -> RenderableType:
    """Seconds waited for the first event and what is being opened: with a bar and counts
    while the corpus is indexed on first use (``counts``: what, done, total)."""
    line = Text.assemble((" starting ", "bold reverse"), (f" {waited:.0f}s", styles.tone("active")))
    if counts is None:
        return line + Text(f" · {STARTING_WHAT}", style="dim")
    what, done, total = counts
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(width=PROGRESS_WIDTH)
    grid.add_column(no_wrap=True)
    grid.add_row(
        line + Text(f" · {what}", style="bold"),
        ProgressBar(total=max(1, total), completed=done, width=PROGRESS_WIDTH),
        Text(f"{done}/{total}", style="bold"),
    )
    return grid


def status_line(
    view: RunView,
    styles: HeaderStyles,
    *,
    run_id: str,
    replay: tuple[int, int] | None,
    live: bool,
    failure: BaseException | None,
) -> Text:
    """The run's workflow and status (``replay``: at event n of m, the status then), the model
    answers the fallback gave, this run's counts and spend, its stage while it runs, its id and
    engine, and why it stopped."""
    text = Text.assemble((f" {view.workflow or 'run'} ", "bold reverse"))
    if replay is not None:
        text.append(f" ▷ REPLAY {replay[0]}/{replay[1]}", style="bold")
    status = f"was {view.status}" if replay is not None else view.status
    shown = styles.status(view.status)
    text.append(
        f" {status}",
        style=Style.combine(
            [Style.parse(str(shown)) if isinstance(shown, str) else shown, Style(bold=True)]
        ),
    )
    fallback = view.fallback_note
    if fallback:
        text.append(f" · {fallback}", style=styles.tone("attention"))
    if view.budget is not None:
        b = view.budget
        text.append(
            f" · this run: calls {b.llm_calls}/{b.max_llm_calls} · tokens {b.tokens}/{b.token_budget}"
        )
        spend = spend_text(b)
        if spend:
            exhausted = b.max_cost_usd is not None and b.cost_usd >= b.max_cost_usd
            text.append(f" · {spend}", style=styles.tone("critical") if exhausted else "")
    if view.stage and view.status in ("RUNNING", "WAITING"):
        text.append(f" · stage {view.stage}", style="dim")
    text.append(f" · {view.run_id or run_id} · {view.engine or '?'}", style="dim")
    if failure is not None:
        stopped = for_display(f" · stopped: {failure}".splitlines()[0])  # its message is a file's
        text.append(stopped, style=styles.tone("critical"))
    elif not live and replay is None:
        text.append("  (replay)", style="italic dim")
    return text
