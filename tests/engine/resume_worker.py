"""A process that resumes a WAITING run with its own answer: two of these race in
test_resume.py, started together at a barrier."""

from __future__ import annotations

import asyncio
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

from engine.context import InterruptAnswer
from engine.kahn import KahnEngine
from engine.protocol import RunContext
from engine.store import RunOwned, RunStore
from tests.engine.kahn_helpers import TEST_REGISTRY


def resume_with(
    db: Path,
    run_id: str,
    interrupt_id: str,
    action: str,
    barrier: Barrier,
    results: Queue[tuple[str, str, str]],
) -> None:
    """Claim the run with ``action`` as the answer and drive it; report what happened."""
    with RunStore(db) as store:
        barrier.wait()
        try:
            store.claim_owner(run_id, {interrupt_id: InterruptAnswer(action=action)})
        except RunOwned as refused:
            results.put((action, "refused", str(refused)))
            return
        engine = KahnEngine(registry=TEST_REGISTRY)
        result = asyncio.run(engine.resume(run_id, RunContext(store=store)))
        results.put((action, "resumed", result.status.value))
