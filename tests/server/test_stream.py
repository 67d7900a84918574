"""Live events over real HTTP: a run started through the API, taken by a real `workbench
worker` process, followed as Server-Sent Events and answered through the API; and a stream
dropped and resumed with ``Last-Event-ID`` that misses no event and repeats none, over 500
events written while it reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
from httpx_sse import ServerSentEvent, connect_sse

from engine.events import InterruptRaised, RunEvent, RunFinished, event_from_json
from tests.server.runs import EventWriter
from tests.server.serving import TOKEN, ServerProcess, workbench_server
from tests.worker.workers import PATIENT, workers
from tui.launch.workspace import Workspace

ATTEMPTS = 10_000
"""Requests a test may make while waiting for the server to let a stream go (a bound)."""


def _sse(
    api: httpx.Client, run_id: str, last_event_id: int | None = None
) -> Iterator[ServerSentEvent]:
    headers = {} if last_event_id is None else {"Last-Event-ID": str(last_event_id)}
    with connect_sse(api, "GET", f"/v1/runs/{run_id}/events/stream", headers=headers) as source:
        assert source.response.status_code == 200
        yield from source.iter_sse()


def _event(sse: ServerSentEvent) -> RunEvent:
    event = event_from_json(sse.data)
    assert (sse.id, sse.event) == (str(event.seq), event.kind)
    return event


def test_a_stream_resumed_by_last_event_id_misses_nothing_and_repeats_nothing(
    api: httpx.Client, pg_database: str, workspace: Workspace
) -> None:
    writer = EventWriter(pg_database, workspace)
    try:
        writer.write(150, per_commit=7)
        seen: list[int] = []
        first = _sse(api, writer.run_id)
        for sse in first:
            seen.append(_event(sse).seq)
            if len(seen) == 100:
                break  # the client drops the connection mid-stream
        first.close()

        # the rest is written while the client reads: some before, some after it resumes
        more = threading.Thread(target=lambda: (writer.write(350, per_commit=3), writer.finish()))
        more.start()
        try:
            for sse in _sse(api, writer.run_id, last_event_id=seen[-1]):
                event = _event(sse)
                seen.append(event.seq)
                if len(seen) == 300:
                    break  # dropped again, while events are still being written
            for sse in _sse(api, writer.run_id, last_event_id=seen[-1]):
                seen.append(_event(sse).seq)
        finally:
            more.join()
        stored = [event.seq for event in writer.store.events(writer.run_id)]
    finally:
        writer.close()
    assert len(stored) > 500
    assert seen == stored  # every stored event once, in order: the stream ended at run_finished


def test_a_run_started_through_the_api_is_run_by_a_worker_followed_and_answered(
    server: ServerProcess, api: httpx.Client, pg_database: str, tmp_path: Path
) -> None:
    with workers(pg_database, tmp_path, 1, *PATIENT):
        started = api.post("/v1/runs", json={"workflow": "approval", "inputs": {"topic": "x"}})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        assert started.json()["workflow"] == "approval"

        events: list[RunEvent] = []
        for sse in _sse(api, run_id):
            event = _event(sse)
            events.append(event)
            if isinstance(event, InterruptRaised):
                answered = api.post(
                    f"/v1/interrupts/{event.interrupt_id}/answer", json={"action": "approve"}
                )
                assert answered.status_code == 200, answered.text
                assert answered.json()["status"] == "answered"
    finished = [event for event in events if isinstance(event, RunFinished)]
    assert [f.status.value for f in finished] == ["WAITING", "COMPLETED"]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert api.get(f"/v1/runs/{run_id}").json()["status"] == "COMPLETED"


def test_a_run_is_refused_with_one_line_when_it_cannot_start(api: httpx.Client) -> None:
    unknown = api.post("/v1/runs", json={"workflow": "nope"})
    assert unknown.status_code == 404
    assert unknown.json()["error"].startswith("no shipped workflow 'nope';")

    broken = api.post("/v1/runs", json={"definition": "name: x\nsteps: [{id: a, uses: no.such}]\n"})
    assert broken.status_code == 400
    assert broken.json()["error"].startswith("uploaded.yaml:")
    assert broken.json()["problems"]

    bad_input = api.post("/v1/runs", json={"workflow": "deep_research", "inputs": {}})
    assert bad_input.status_code == 400
    assert "query" in bad_input.json()["error"]

    both = api.post("/v1/runs", json={"workflow": "approval", "definition": "name: x"})
    assert both.status_code == 422


def test_a_queued_run_is_cancelled_and_a_finished_one_neither_cancelled_nor_resumed(
    api: httpx.Client,
) -> None:
    run_id = api.post("/v1/runs", json={"workflow": "fan_out", "run_id": "mine-1"}).json()["run_id"]
    assert run_id == "mine-1"
    queued = api.get(f"/v1/runs/{run_id}").json()
    assert (queued["status"], queued["reason"]) == ("WAITING", "queued for a worker")

    cancelled = api.post(f"/v1/runs/{run_id}/cancel")
    assert cancelled.json() == {"run_id": run_id, "outcome": "dequeued"}
    [finished] = [_event(sse) for sse in _sse(api, run_id) if sse.event == "run_finished"]
    assert isinstance(finished, RunFinished) and finished.status.value == "CANCELLED"

    again = api.post(f"/v1/runs/{run_id}/cancel")
    assert again.status_code == 409
    assert again.json()["error"].startswith(f"run {run_id} is CANCELLED;")
    assert api.post(f"/v1/runs/{run_id}/resume", json={}).status_code == 409
    assert api.post("/v1/runs/nope/resume", json={}).status_code == 404


def test_streams_past_the_servers_most_are_refused_until_one_closes(
    tmp_path: Path, pg_database: str, workspace: Workspace
) -> None:
    writer = EventWriter(pg_database, workspace)
    writer.write(3)
    try:
        with (
            workbench_server(tmp_path, pg_database, TOKEN, "--max-streams", "2") as server,
            httpx.Client(base_url=server.url, headers=server.headers(), timeout=60) as api,
        ):
            first, second = _sse(api, writer.run_id), _sse(api, writer.run_id)
            assert _event(next(first)).seq == _event(next(second)).seq == 1  # both are open
            third = api.get(f"/v1/runs/{writer.run_id}/events/stream")
            assert third.status_code == 503
            assert third.json()["error"].startswith("this server follows 2 event streams already")
            first.close()
            for attempt in _sse_attempts(api, writer.run_id):
                if attempt is not None:
                    assert _event(attempt).seq == 1
                    break
            second.close()
    finally:
        writer.close()


def _sse_attempts(api: httpx.Client, run_id: str) -> Iterator[ServerSentEvent | None]:
    """Try to open a stream until the server has let a closed one go (it hears of a client's
    leaving on its next read): None for each refusal, then the stream's first event."""
    for _ in range(ATTEMPTS):
        with connect_sse(api, "GET", f"/v1/runs/{run_id}/events/stream") as source:
            if source.response.status_code == 503:
                yield None
                continue
            yield next(source.iter_sse())
            return
    raise AssertionError(f"the server never let a closed stream go in {ATTEMPTS} attempts")
