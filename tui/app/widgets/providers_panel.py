"""Provider health: one row per provider from its latest ``provider_state`` snapshot.

The cooldown counts down between snapshots: remaining = the snapshot's
``cooldown_remaining_s`` less the time since the snapshot was taken, read
from the clock the app injects (a frozen clock in tests).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from tui.app.run_state import RunView
from tui.app.status_style import STATUS_CLASSES, StatusStyler, on_theme_change, status_style
from tui.present.breaker_story import format_cooldown
from tui.present.headless import console_style

SPARK = "▁▂▃▄▅▆▇█"
SPARK_CELLS = 8
NAME_CELLS = 10
BADGE = Style(bold=True, reverse=True)
"""A breaker state is a badge: its status colour as the background."""


def sparkline(values: list[float], width: int = 10) -> str:
    values = [v for v in values if isinstance(v, (int, float))][-width:]
    if not values:
        return "·" * 3
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    return "".join(
        SPARK[min(len(SPARK) - 1, int((v - low) / span * (len(SPARK) - 1)))] for v in values
    )


def _ms(value: Any) -> str:
    """A latency in milliseconds, or whole seconds from 10 s, so it fits four cells."""
    if not isinstance(value, (int, float)):
        return "–"
    return f"{float(value) * 1000:.0f}" if value < 10 else f"{float(value):.0f}s"


def _headroom(remaining: Any, limit: Any) -> str:
    if not isinstance(remaining, int) or not isinstance(limit, int) or limit <= 0:
        return "–"
    return f"{remaining * 100 // limit}%"


def cooldown_left(snapshot: dict[str, Any], seen_at: float, now: float) -> float:
    remaining = float(snapshot.get("cooldown_remaining_s") or 0.0)
    return max(0.0, remaining - max(0.0, now - seen_at))


def state_badge(state: str, style: StatusStyler) -> Text:
    """A breaker state as a badge in its status colour."""
    badge = Text(f" {state.replace('_', '-')} ", style=style(state))
    badge.stylize(BADGE)
    return badge


LEGEND = (
    "CLOSED serving · HALF-OPEN one probe allowed · OPEN resting after failures · "
    "⚠ degraded · ✗ misconfigured · ok: success rate · busy: in flight/limit"
)


def providers_table(
    view: RunView,
    now: float,
    selected: str | None = None,
    style: StatusStyler = console_style,
    live: bool = True,
) -> Table:
    """One row per provider, breaker states styled by ``style`` (the widget's theme in the app);
    ``selected`` is highlighted; ``live``: the run is going on (in flight is shown)."""
    table = Table(expand=True, box=None, pad_edge=False, header_style="bold", collapse_padding=True)
    table.caption = LEGEND
    table.caption_justify = "left"
    # Each column is as wide as its widest value can be, so columns keep their places while
    # states, cooldowns and latencies change (a breaker going HALF-OPEN moved them before).
    for column, justify, width in (
        ("provider", "left", NAME_CELLS + 2),
        ("state", "left", len(" HALF-OPEN ")),
        ("cool", "right", len("3600s")),
        ("ok", "right", len("100%")),
        ("p50/p95ms", "right", len("9999/9999")),
        ("latency", "left", SPARK_CELLS),
        ("rpm", "right", len("100%")),
        ("tpm", "right", len("100%")),
        ("busy", "right", len("99/99")),
    ):
        table.add_column(column, justify=justify, no_wrap=True, min_width=width)  # type: ignore[arg-type]
    for name in sorted(view.providers):
        snap = view.providers[name]
        state = str(snap.get("state", "?"))
        left = cooldown_left(snap, view.provider_seen_at.get(name, now), now)
        rate = snap.get("success_rate") if snap.get("requests_total") else None
        mark = " ✗" if snap.get("misconfigured") else " ⚠" if snap.get("degraded") else ""
        table.add_row(
            Text.assemble(name[:NAME_CELLS], (mark, style("HALF_OPEN"))),
            state_badge(state, style),
            format_cooldown(left) if state != "CLOSED" and left > 0 else "–",
            f"{float(rate) * 100:.0f}%" if isinstance(rate, (int, float)) else "–",
            f"{_ms(snap.get('p50_latency_s'))}/{_ms(snap.get('p95_latency_s'))}",
            sparkline(list(snap.get("recent_latencies_s") or []), SPARK_CELLS),
            _headroom(snap.get("rpm_remaining"), snap.get("rpm_limit")),
            _headroom(snap.get("tpm_remaining"), snap.get("tpm_limit")),
            f"{snap.get('in_flight', 0)}/{snap.get('bulkhead_size', 0) or '∞'}" if live else "–",
            style="reverse" if name == selected else None,
        )
    if not view.providers:
        table.add_row("none yet", *[""] * 8)
    return table


class ProvidersPanel(Static, can_focus=True):
    """Circuit-breaker state and capacity of every provider the run uses."""

    HELP = """
## Providers

One row per LLM provider: breaker state (CLOSED serves, OPEN rejects until its
cooldown ends, HALF-OPEN lets one probe through), the cooldown left, success
rate, p50/p95 latency with a sparkline of recent calls, RPM/TPM headroom,
requests in flight against the bulkhead. ⚠ marks a degraded provider (up but
not at full service), ✗ a misconfigured one.

- **Up / Down**: choose a provider
- **Enter**: its detail — models, last error and status code, why the breaker
  tripped, cooldown left, spend
"""

    BINDINGS = [
        Binding("up", "move(-1)", "Up", show=False, id="providers.up"),
        Binding("down", "move(1)", "Down", show=False, id="providers.down"),
        Binding("enter", "open", "Provider detail", id="providers.open"),
    ]

    class Chosen(Message):
        """The person asked for one provider's detail."""

        def __init__(self, provider: str) -> None:
            self.provider = provider
            super().__init__()

    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, clock: Callable[[], float], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._clock = clock
        self._view = RunView()
        self.selected: str | None = None
        """The provider Enter opens; highlighted while the panel has focus."""
        self.live = False
        """A live run counts cooldowns down against the clock; a replay stops at its event's time."""
        self._rows = -1
        """Rows of the table drawn last: the panel's height changes only with their number."""

    def on_mount(self) -> None:
        on_theme_change(self, lambda: self.show(self._view))

    def show(self, view: RunView) -> None:
        self._view = view
        if self.selected not in view.providers:
            self.selected = min(view.providers, default=None)
        self._draw()

    def _draw(self) -> None:
        rows = max(1, len(self._view.providers))
        self.update(
            providers_table(
                self._view,
                self.now(),
                self.selected if self.has_focus else None,
                partial(status_style, self),
                self.live,
            ),
            layout=rows != self._rows,
        )
        self._rows = rows

    def now(self) -> float:
        return max(self._clock(), self._view.last_ts) if self.live else self._view.last_ts

    def snapshot(self, provider: str) -> tuple[dict[str, Any], float]:
        """The provider's latest snapshot and its cooldown left now ({} and 0 when unknown)."""
        snap = self._view.providers.get(provider)
        if snap is None:
            return {}, 0.0
        now = self.now()
        return snap, cooldown_left(snap, self._view.provider_seen_at.get(provider, now), now)

    def tick(self) -> None:
        """Count live cooldowns down; a replay's time stands still, so it has nothing to redraw."""
        if self.live and self._view.cooling_down:
            self._draw()

    def action_move(self, delta: int) -> None:
        names = sorted(self._view.providers)
        if not names:
            return
        index = names.index(self.selected) if self.selected in names else 0
        self.selected = names[max(0, min(len(names) - 1, index + delta))]
        self._draw()

    def action_open(self) -> None:
        if self.selected:
            self.post_message(self.Chosen(self.selected))

    def on_focus(self) -> None:
        self._draw()

    def on_blur(self) -> None:
        self._draw()
