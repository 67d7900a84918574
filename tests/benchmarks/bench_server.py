"""The run API's live events (printed, never asserted): how long an event takes from its
commit in PostgreSQL to a client of the event stream, p50 and p99.

A real `workbench server` process (tests/server/serving.py) on loopback, over a real local
PostgreSQL (tests/pg.py: Unix socket, ``fsync=off``). A writer holding a run's lease (as a
worker does) commits one log event per transaction; a client in this process follows the
run's ``/events/stream`` over HTTP. Both stamp times on this process's clock: the writer as it
starts the transaction, the client when the event's SSE frame has arrived — so each figure
includes the INSERT and the COMMIT themselves and is an upper bound of commit-to-client. (The
instant the writer's commit returns is no stamp to measure from: the client often has the
event by then, while the writer is still finishing its batch.) Paced: the next
event is written once the client has the previous one, so each figure is one event's way
(NOTIFY in the committing transaction, the server's LISTEN connection, a read of the store,
the SSE frame) and not a queue behind others. Then a burst, written back to back without
waiting, shows the same way under load. The first :data:`WARM_UP` events are not counted.
"""

from __future__ import annotations

import math
import os
import queue
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from httpx_sse import connect_sse

from tests.server.runs import EventWriter
from tests.server.serving import workbench_server
from tui.launch.workspace import Workspace

EVENTS = 1000
WARM_UP = 50
BURST = 1000
WAIT_S = 60.0
"""How long the writer waits for the client to see one event before giving up (a bound)."""


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


class StreamClient:
    """Follows one run's event stream in a thread: each event's seq and arrival time."""

    def __init__(self, url: str, headers: dict[str, str], run_id: str, after: int) -> None:
        self.arrivals: queue.Queue[tuple[int, float]] = queue.Queue()
        self.ready = threading.Event()
        self._client = httpx.Client(base_url=url, headers=headers, timeout=WAIT_S)
        self._path = f"/v1/runs/{run_id}/events/stream"
        self._after = after
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        with connect_sse(self._client, "GET", self._path, params={"after": self._after}) as source:
            self.ready.set()
            for sse in source.iter_sse():
                arrived = time.perf_counter()
                if sse.event == "run_finished":
                    return
                self.arrivals.put((int(sse.id), arrived))

    def close(self) -> None:
        self._thread.join(timeout=WAIT_S)
        self._client.close()


def paced(writer: EventWriter, client: StreamClient, count: int) -> tuple[list[float], int]:
    """Milliseconds from commit to arrival, one event in flight at a time, and how many
    events arrived out of order or twice (0 expected)."""
    latencies: list[float] = []
    seqs: list[int] = []
    for _ in range(count):
        committed = time.perf_counter()
        writer.write(1)
        seq, arrived = client.arrivals.get(timeout=WAIT_S)
        seqs.append(seq)
        latencies.append((arrived - committed) * 1000)
    return latencies, _out_of_order(seqs)


def burst(writer: EventWriter, client: StreamClient, count: int) -> tuple[list[float], int]:
    """Milliseconds from commit to arrival for ``count`` events written back to back, and how
    many events arrived out of order or twice (0 expected)."""
    committed: list[float] = []
    for _ in range(count):
        committed.append(time.perf_counter())
        writer.write(1)
    arrivals = [client.arrivals.get(timeout=WAIT_S) for _ in range(count)]
    pairs = zip(arrivals, committed, strict=True)
    latencies = [(arrived - at) * 1000 for (_, arrived), at in pairs]
    return latencies, _out_of_order([seq for seq, _ in arrivals])


def _out_of_order(seqs: list[int]) -> int:
    """Events that did not follow the one before by one seq (missed, repeated, reordered)."""
    return sum(1 for a, b in zip(seqs, seqs[1:], strict=False) if b != a + 1)


def _line(name: str, latencies: list[float]) -> str:
    return (
        f"  {name:<7} p50 {statistics.median(latencies):6.2f} ms"
        f"  p99 {_percentile(latencies, 0.99):6.2f} ms"
        f"  (min {min(latencies):.2f}, max {max(latencies):.2f} ms; {len(latencies)} events)"
    )


def main() -> None:
    from tests.pg import postgres_server
    from tui.launch.stores import upgrade_database

    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            postgres_server(upgrade_database) as pg,
        ):
            database = pg.database()
            writer = EventWriter(database, Workspace.at(Path(folder) / "writer"))
            try:
                with workbench_server(Path(folder), database) as server:
                    last = max((e.seq for e in writer.store.events(writer.run_id)), default=0)
                    client = StreamClient(server.url, server.headers(), writer.run_id, last)
                    client.ready.wait(timeout=WAIT_S)
                    print(
                        "event latency, commit to an SSE client on loopback (target p50 ≤ 10 ms, p99 ≤ 100 ms):"
                    )
                    steady, wrong = paced(writer, client, WARM_UP + EVENTS)
                    print(_line("paced", steady[WARM_UP:]) + f"; {wrong} out of order", flush=True)
                    loaded, wrong = burst(writer, client, BURST)
                    print(_line("burst", loaded) + f"; {wrong} out of order", flush=True)
                    writer.finish()
                    client.close()
            finally:
                writer.close()
            print(f"  (load average when done: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    except BaseException as error:  # pytest's skip outside pytest: no server installed
        if type(error).__name__ not in ("Skipped", "Failed"):
            raise
        print(f"  not measured: {error}")


if __name__ == "__main__":
    main()
