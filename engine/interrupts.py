"""A step's interrupts: the stored answer (one given ahead, as ``workbench resume --answer``
stores it), else the engine's pause (LangGraph's ``interrupt()``), else the responder — else
the step waits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from engine.context import InterruptAnswer, InterruptRequest, StepContext
from engine.events import InterruptRaised, InterruptResolved
from engine.protocol import RunContext
from engine.recorder import RunRecorder
from engine.run_state import StepRecord
from engine.states import StepStatus
from engine.store import InterruptRecord

AnswerPause = Callable[[InterruptRecord], Awaitable[InterruptAnswer]]
"""Engine-supplied: pause a step until a person answers its recorded interrupt.

Returns the answer, or raises (a subclass of) :class:`WaitingForHuman` when the
engine stops the run to wait. An engine that pauses steps itself announces the
interrupts itself, with the steps the pause holds (LangGraph: the superstep).
"""


class WaitingForHuman(Exception):
    """Nobody is there to answer an interrupt: the step waits, the run may go WAITING."""

    def __init__(self, interrupt_id: str, step_id: str) -> None:
        super().__init__(f"{step_id} waits for an answer to {interrupt_id}")
        self.interrupt_id = interrupt_id
        self.step_id = step_id


class Interrupts:
    """Every step's interrupt asker for one run."""

    def __init__(self, recorder: RunRecorder, run: RunContext, pause: AnswerPause | None) -> None:
        self.recorder = recorder
        self.run = run
        self._pause = pause
        """None: the run's responder answers, else the step waits (the Kahn engine)."""

    async def ask(
        self, interrupt_id: str, request: InterruptRequest, ctx: StepContext
    ) -> InterruptAnswer:
        """A stored answer, else the engine's pause, else the responder — or the step
        waits (raises :class:`WaitingForHuman`)."""
        store = self.recorder.store
        record = self.recorder.state.steps[ctx.step_id]
        stored = store.get_interrupt(interrupt_id)
        if stored is not None and stored.answer is not None:
            if stored.status != "resolved":
                self._resolve(stored, stored.answer, record)
            return stored.answer
        raised: InterruptRaised | None = None
        if stored is None:
            stored, raised = self._record(interrupt_id, request, ctx, record)
        if self._pause is not None:
            answer = await self._pause(stored)
        else:
            given = await self.answer_given(stored, raised or self.raised_event(stored))
            if given is None:
                raise WaitingForHuman(stored.interrupt_id, stored.step_id)
            answer = given
        self._resolve(stored, answer, record)
        return answer

    def _record(
        self, interrupt_id: str, request: InterruptRequest, ctx: StepContext, record: StepRecord
    ) -> tuple[InterruptRecord, InterruptRaised | None]:
        """Store a new interrupt with the step WAITING_HUMAN, announced in the same commit
        unless the engine pauses the step and announces it itself."""
        recorder = self.recorder
        stored = InterruptRecord(
            interrupt_id=interrupt_id,
            run_id=recorder.run_id,
            step_id=ctx.step_id,
            iteration=ctx.iteration,
            request=request,
            created_ts=0.0,
        )
        raised: InterruptRaised | None = None
        with recorder.store.batch():
            record.status = StepStatus.WAITING_HUMAN
            record.changed()
            recorder.save(record)
            recorder.save_engine_state()  # the attempt it asks in, for a resume
            recorder.store.add_interrupt(stored)
            if self._pause is None:
                raised = recorder.emit(self.raised_event(stored))
        return stored, raised

    async def answer_given(
        self, stored: InterruptRecord, raised: InterruptRaised
    ) -> InterruptAnswer | None:
        """The responder's answer; None when nobody answers."""
        if self.run.responder is None:
            return None
        return await self.run.responder(raised, stored.request)

    def raised_event(
        self, stored: InterruptRecord, held_steps: list[str] | None = None
    ) -> InterruptRaised:
        """``interrupt_raised`` for ``stored``; the pause holds ``held_steps`` (default: its own step)."""
        request = stored.request
        return InterruptRaised(
            run_id=self.recorder.run_id,
            interrupt_id=stored.interrupt_id,
            step_id=stored.step_id,
            iteration=stored.iteration,
            interrupt_kind=request.kind,
            prompt=request.prompt,
            payload=request.payload,
            options=request.options,
            held_steps=held_steps or [stored.step_id],
        )

    def _resolve(
        self, stored: InterruptRecord, answer: InterruptAnswer, record: StepRecord
    ) -> None:
        recorder = self.recorder
        with recorder.store.batch():
            recorder.store.add_interrupt(
                stored.model_copy(update={"status": "resolved", "answer": answer})
            )
            recorder.emit(
                InterruptResolved(
                    run_id=recorder.run_id,
                    interrupt_id=stored.interrupt_id,
                    step_id=stored.step_id,
                    answer=answer.model_dump(mode="json"),
                    automatic=answer.automatic,
                )
            )
            record.status = StepStatus.RUNNING
            record.changed()
            recorder.save(record)

    def mark_waiting(self, step_id: str) -> None:
        """Store a step the engine stopped while it waits for an answer as WAITING_HUMAN."""
        record = self.recorder.state.steps[step_id]
        record.status = StepStatus.WAITING_HUMAN
        record.changed()
        self.recorder.save(record)
