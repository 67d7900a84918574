"""Running a coroutine on a thread and an event loop of its own.

A worker's event loop carries procrastinate's heartbeat, its polls and the reaper; a run's
engine may do CPU-heavy work (indexing a corpus, embeddings) that would block whatever loop it
runs on, and a blocked loop sends no heartbeat, so a healthy run would be taken over. Each run
therefore drives its engine on a thread of its own: pure-Python work gives the GIL back every
few milliseconds and NumPy releases it, so the worker's loop keeps its beat. (The app does the
same for the UI's loop: tui/launch/run_driver.py.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class OwnLoop(Generic[T]):
    """One coroutine on its own thread and loop; awaited from another loop with :meth:`wait`."""

    def __init__(self, name: str, make: Callable[[], Coroutine[Any, Any, T]]) -> None:
        self._make = make
        self._result: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[T] | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._body, name=name, daemon=True)

    def start(self) -> OwnLoop[T]:
        self._thread.start()
        self._ready.wait()
        return self

    def _body(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            self._task = loop.create_task(self._make())
            self._ready.set()
            try:
                self._result.set_result(loop.run_until_complete(self._task))
            except BaseException as error:  # noqa: BLE001 - handed to the waiting loop whole
                self._result.set_exception(error)
        finally:
            self._ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def cancel(self) -> None:
        """Cancel the coroutine (it settles what it ran and ends; :meth:`wait` raises)."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # closed meanwhile: it has ended
                pass

    async def wait(self) -> T:
        """The coroutine's result; cancelling the waiter cancels the coroutine, and waits for
        it to end before re-raising."""
        future = asyncio.wrap_future(self._result)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            self.cancel()
            await asyncio.gather(future, return_exceptions=True)
            raise

    @property
    def done(self) -> bool:
        return self._result.done()
