"""The footer: the keys that act now, the screen's most important first, as many as fit.

Textual's footer lists every shown binding in the order the focus chain gives and cuts the row at
the terminal's edge, so on a narrow terminal the keys that mattered fell off the end, and keys
that could do nothing (an answer with no prompt waiting) stayed listed. This one keeps the keys
that act now (:meth:`KeyRanking.key_acts`), orders them by the screen's ranking
(:attr:`KeyRanking.KEY_ORDER`: binding ids, most important first) and shows as many as the width
holds, then ``? Help`` and the palette's key, which are always there. Every other key is in the
help panel (``?``) and the palette.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

HELP_ACTION = "app.toggle_help"
KEY_PADDING = 3
"""Cells a footer key takes besides its key and description (its padding and the gap)."""


class KeyRanking:
    """What a screen tells its footer: its keys' order of importance and whether one acts now.

    A key that cannot act stays bound (pressing it says why, in a toast); the footer leaves it
    out."""

    KEY_ORDER: ClassVar[tuple[str, ...]] = ()
    """Binding ids, most important first; unranked keys follow in the focus chain's order."""

    def key_acts(self, action: str) -> bool:
        """Whether the binding's ``action`` can do something now (default: yes)."""
        return True

    def key_order(self) -> tuple[str, ...]:
        """The ranking in force now (default: KEY_ORDER)."""
        return self.KEY_ORDER


def _width(key: str, description: str) -> int:
    return len(key) + (len(description) + 1 if description else 0) + KEY_PADDING


class KeyFooter(Footer):
    """See the module's docstring."""

    def __init__(self) -> None:
        super().__init__(compact=True)
        self._drawn_width = 0

    def ranked(self) -> list[Binding]:
        """The keys that act now, one per action, most important first."""
        screen = self.screen
        acts = screen.key_acts if isinstance(screen, KeyRanking) else None
        order = screen.key_order() if isinstance(screen, KeyRanking) else ()
        chosen: dict[str, Binding] = {}
        for _node, binding, enabled, _tooltip in screen.active_bindings.values():
            if not binding.show or not enabled or binding.action in chosen:
                continue
            if binding.action in (HELP_ACTION, "toggle_help", "help_key", "command_palette"):
                continue
            if acts is not None and not acts(binding.action):
                continue
            chosen[binding.action] = binding
        listed = list(chosen.values())
        rank = {binding_id: index for index, binding_id in enumerate(order)}
        return sorted(listed, key=lambda b: (rank.get(b.id or "", len(rank)), listed.index(b)))

    def _fitting(self, bindings: Iterable[Binding], room: int) -> list[Binding]:
        shown: list[Binding] = []
        for binding in bindings:
            cells = _width(self.app.get_key_display(binding), binding.description)
            if cells > room:
                break
            shown.append(binding)
            room -= cells
        return shown

    def shown(self) -> list[Binding]:
        """The keys the footer lists now: the ranked ones that fit, then help and the palette."""
        help_binding = Binding("question_mark", HELP_ACTION, "Help")
        palette = Binding(self.app.COMMAND_PALETTE_BINDING, "app.command_palette", "Palette")
        always = [help_binding, palette]
        room = (self.size.width or self.app.size.width) - sum(
            _width(self.app.get_key_display(b), b.description) for b in always
        )
        return [*self._fitting(self.ranked(), room), *always]

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        self._drawn_width = self.size.width
        for binding in self.shown():
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                tooltip=binding.tooltip or binding.description,
            ).data_bind(compact=Footer.compact)

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._drawn_width:
            self.call_after_refresh(self.recompose)
