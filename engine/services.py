"""The application's services for a run's steps, one value per type (DESIGN §11).

The engine knows no domain, yet a domain's steps need things only the
application has: the folder runs write their files in, the port agents reach a
model through. Each package declares the types it reads (research's
``RunFolders``, agents' ``AgentServices``), the composition root provides one
value of each, and a step asks for it by its type — ``ctx.services.app.get(RunFolders)``
— typed end to end, with no string key to mistype and no layer reading another's
keys. The engine only carries the registry from :class:`~engine.protocol.RunContext`
to every :class:`~engine.context.StepContext`; it never reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class ServiceRegistry:
    """One value per type; a value is found by its own class, exactly (not by a base class)."""

    def __init__(self, *values: object) -> None:
        self._values: dict[type, object] = {}
        for value in values:
            self.provide(value)

    def provide(self, value: object) -> None:
        """Make ``value`` the run's service of its type, in place of any before it."""
        self._values[type(value)] = value

    def get(self, kind: type[T]) -> T | None:
        """The service of type ``kind``, or None when the application provided none."""
        found = self._values.get(kind)
        return found if isinstance(found, kind) else None

    def setdefault(self, kind: type[T], make: Callable[[], T]) -> T:
        """The service of type ``kind``; when there is none, ``make()`` becomes it (state a
        package keeps for the runs it serves, built on first use)."""
        found = self.get(kind)
        if found is None:
            found = self._values[kind] = make()
        return found
