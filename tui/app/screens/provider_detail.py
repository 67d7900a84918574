"""One provider's detail: its models, why its breaker is where it is, its last error, its spend.

Everything shown comes from the provider's latest ``provider_state`` snapshot
(router.models.ProviderSnapshot, stored as a plain dict in the event); keys a
snapshot lacks (older runs, other router versions) read as "–". For a live run the
cooldown counts down once a second against the panel's clock, as the panel's does; a stored
run's time stands still, so its detail is drawn once and never changes by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tui.app.status_style import STATUS_CLASSES, StatusStyler, status_style
from tui.app.widgets.key_footer import KeyFooter
from tui.app.widgets.providers_panel import state_badge
from tui.present.breaker_story import error_note, format_cooldown, why
from tui.present.headless import console_style

SnapshotSource = Callable[[], tuple[Mapping[str, Any], float]]
"""Returns the provider's latest snapshot and its cooldown left now."""


def _text(value: Any) -> str:
    return "–" if value is None or value == "" else str(value)


def _seconds(value: Any) -> str:
    return format_cooldown(float(value)) if isinstance(value, (int, float)) else "–"


def _percent(value: Any) -> str:
    return f"{float(value) * 100:.0f}%" if isinstance(value, (int, float)) else "–"


def trip_reason(snap: Mapping[str, Any]) -> str:
    """Why the breaker is not CLOSED, as the event log says it (tui.present.breaker_story), with how
    many trips in a row."""
    if snap.get("misconfigured"):
        return f"misconfigured: {_text(snap.get('misconfigured_reason'))}"
    if snap.get("state") == "CLOSED":
        return "serving (breaker CLOSED)"
    trips = snap.get("consecutive_trips")
    streak = f"; trip {trips} in a row" if isinstance(trips, int) and trips > 1 else ""
    return (why(snap) or "no error recorded") + streak


def _models(snap: Mapping[str, Any]) -> str:
    models = snap.get("models") or {}
    if not isinstance(models, Mapping) or not models:
        return "–"
    return ", ".join(f"tier {tier}: {name}" for tier, name in sorted(models.items(), key=str))


def detail_table(
    snap: Mapping[str, Any], cooldown_left: float, style: StatusStyler = console_style
) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False, expand=True)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value")
    state = str(snap.get("state", "?"))
    table.add_row(
        "state",
        state_badge(state, style),
    )
    table.add_row("why", trip_reason(snap))
    table.add_row("last error", error_note(snap) or "none")
    ceiling = snap.get("cooldown_ceiling_s")
    table.add_row(
        "cooldown left",
        (format_cooldown(cooldown_left) if state != "CLOSED" and cooldown_left > 0 else "–")
        + (f" of {_seconds(ceiling)}" if isinstance(ceiling, (int, float)) and ceiling else ""),
    )
    table.add_row("kind", _text(snap.get("kind")))
    table.add_row("models", _models(snap))
    unhealthy = snap.get("unhealthy_models") or {}
    if isinstance(unhealthy, Mapping) and unhealthy:
        table.add_row(
            "models out",
            Text(
                "\n".join(f"{m}: {why}" for m, why in sorted(unhealthy.items())),
                style=style("HALF_OPEN"),
            ),
        )
    cost = snap.get("cost_usd_total")
    table.add_row("spend", f"${float(cost):.4f}" if isinstance(cost, (int, float)) else "–")
    table.add_row(
        "requests (all runs)",
        f"{_text(snap.get('requests_total'))} · ok {_text(snap.get('successes_total'))}"
        f" · failed {_text(snap.get('failures_total'))} · success {_percent(snap.get('success_rate'))}",
    )
    table.add_row(
        "latency",
        f"p50 {_seconds(snap.get('p50_latency_s'))} · p95 {_seconds(snap.get('p95_latency_s'))}"
        f" · p99 {_seconds(snap.get('p99_latency_s'))}",
    )
    table.add_row(
        "rate limits",
        f"rpm {_text(snap.get('rpm_remaining'))}/{_text(snap.get('rpm_limit'))}"
        f" · tpm {_text(snap.get('tpm_remaining'))}/{_text(snap.get('tpm_limit'))}",
    )
    table.add_row("in flight", f"{_text(snap.get('in_flight'))}/{snap.get('bulkhead_size') or '∞'}")
    return table


class ProviderDetailScreen(ModalScreen[None]):
    CSS_PATH = "provider_detail.tcss"
    HELP = """
## Provider detail

One provider as the router last reported it: breaker state and why it is
there (the error class and HTTP status code that tripped it, trips in a row),
the cooldown left before the next probe, its models (and any taken out of
traffic), spend, request counts, latency and rate-limit headroom.
**Escape** closes.
"""
    BINDINGS = [Binding("escape,q", "dismiss", "Close", id="provider_detail.close")]
    COMPONENT_CLASSES = set(STATUS_CLASSES)

    def __init__(self, provider: str, source: SnapshotSource, *, live: bool) -> None:
        super().__init__()
        self.provider = provider
        self._source = source
        self._live = live

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-box"):
            yield Static(Text(f"provider {self.provider}", style="bold"), id="detail-title")
            yield Static(id="provider-facts")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_facts()
        if self._live:
            self.set_interval(1.0, self.refresh_facts)
        self.query_one("#detail-box").focus()

    def refresh_facts(self) -> None:
        snap, left = self._source()
        self.query_one("#provider-facts", Static).update(
            detail_table(snap, left, partial(status_style, self))
        )

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
