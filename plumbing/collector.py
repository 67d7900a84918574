"""Python's cycle collector kept off what it need not walk: paused while a burst of
long-lived, acyclic objects is built, and shown none of what a command keeps until it ends.

Building tens of thousands of objects that stay alive until the burst ends (a workflow's nodes,
specs and compiled expressions; a run's start with its graph) under the collector's eye
promotes them to its oldest generation on the way, and every full collection meanwhile walks
all of them again: a large workflow then costs more per step than a small one. None of them form
cycles, so reference counting still frees everything. The collector is left as it was found: a
process that turned it off keeps it off.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def cycle_collection_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def kept_from_collection() -> Callable[[], None]:
    """Take every object alive now out of the cycle collector's sight (``gc.freeze``) and
    return what gives them back (``gc.unfreeze``), for a command that has loaded what it keeps
    until it ends — a workflow of thousands of steps, the modules: every collection meanwhile
    would walk all of it again, and the imports that follow and a run's records bring
    collections on (about 15 µs a step of a 1,000-step chain through ``workbench run
    --headless``, issue 26). Nothing is taken when something else already froze objects: it
    owns the freeze."""
    if gc.get_freeze_count():
        return _nothing_taken
    gc.freeze()
    return gc.unfreeze


def _nothing_taken() -> None:
    return None
