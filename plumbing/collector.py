"""Python's cycle collector paused while a burst of long-lived, acyclic objects is built.

Building tens of thousands of objects that stay alive until the burst ends (a workflow's nodes,
specs and compiled expressions; a run's start with its graph) under the collector's eye
promotes them to its oldest generation on the way, and every full collection meanwhile walks
all of them again: a large workflow then costs more per step than a small one. None of them form
cycles, so reference counting still frees everything. The collector is left as it was found: a
process that turned it off keeps it off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
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
