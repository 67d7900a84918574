"""A `workbench server`'s runs read as a run store: the :class:`~engine.store.RunReader` the
app and ``workbench runs`` read local runs through, over the run API. The server's answers are
validated into the store's own models, so what is shown is what a local store would give."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from engine.context import InterruptAnswer, JournalEntry
from engine.events import EVENT_ADAPTER, RunEvent
from engine.store import (
    InterruptClosed,
    InterruptRecord,
    RunInputs,
    RunRecord,
    RunSummary,
    StepResult,
)
from tui.client.http import NotOnServer, ServerClient, ServerError

PAGE = 5000
"""Events asked for per request (the server's largest page)."""


def _q(identifier: str) -> str:
    """An id as one path segment (a ``/`` or ``?`` in it stays in it)."""
    return quote(identifier, safe="")


class RemoteRunStore:
    """The runs of the server ``client`` talks to."""

    def __init__(self, client: ServerClient) -> None:
        self.client = client

    @property
    def location(self) -> str:
        return f"the server at {self.client.url}"

    def list_runs(self, limit: int = 50) -> list[RunSummary]:
        fields = RunSummary.model_fields
        return [
            RunSummary.model_validate({key: value for key, value in run.items() if key in fields})
            for run in self.client.get("/v1/runs", limit=limit)
        ]

    def list_runs_with_inputs(self, limit: int = 50) -> list[RunInputs]:
        return [RunInputs.model_validate(run) for run in self.client.get("/v1/runs", limit=limit)]

    def get_run(self, run_id: str) -> RunRecord:
        return RunRecord.model_validate(self.client.get(f"/v1/runs/{_q(run_id)}"))

    def events(self, run_id: str, after_seq: int = 0) -> list[RunEvent]:
        found: list[RunEvent] = []
        while True:
            page = self.client.get(f"/v1/runs/{_q(run_id)}/events", after=after_seq, limit=PAGE)
            found += [EVENT_ADAPTER.validate_python(event) for event in page["events"]]
            if not page["more"] or not found:
                return found
            after_seq = found[-1].seq

    def step_results(self, run_id: str) -> dict[str, StepResult]:
        steps: dict[str, Any] = self.client.get(f"/v1/runs/{_q(run_id)}/steps")
        return {step_id: StepResult.model_validate(step) for step_id, step in steps.items()}

    def journal_entries(
        self, run_id: str, step_id: str, iteration: int
    ) -> list[tuple[int, JournalEntry]]:
        calls = self.client.get(f"/v1/runs/{_q(run_id)}/journal", step=step_id, iteration=iteration)
        return [(call["index"], JournalEntry.model_validate(call["entry"])) for call in calls]

    def interrupts(self, run_id: str) -> list[InterruptRecord]:
        return [
            InterruptRecord.model_validate(record)
            for record in self.client.get(f"/v1/runs/{_q(run_id)}/interrupts")
        ]

    def get_interrupt(self, interrupt_id: str) -> InterruptRecord | None:
        try:
            return InterruptRecord.model_validate(
                self.client.get(f"/v1/interrupts/{_q(interrupt_id)}")
            )
        except NotOnServer:
            return None

    def pending_interrupts(self, run_id: str) -> list[InterruptRecord]:
        return [record for record in self.interrupts(run_id) if record.status == "pending"]

    def record_answer(self, interrupt_id: str, answer: InterruptAnswer) -> InterruptRecord:
        """Answer on the server, which queues the run again for a worker.

        :class:`~engine.store.InterruptClosed` when another answer was stored first (the
        server's 409), as a local store says it."""
        try:
            answered = self.client.post(
                f"/v1/interrupts/{_q(interrupt_id)}/answer", answer.model_dump(mode="json")
            )
        except ServerError as error:
            closed = (
                self.get_interrupt(interrupt_id) if error.status == HTTPStatus.CONFLICT else None
            )
            if closed is None or closed.status == "pending":
                raise
            raise InterruptClosed(closed) from None
        return InterruptRecord.model_validate(answered)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> RemoteRunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
