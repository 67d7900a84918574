"""The run store (SQLite, memory and PostgreSQL), the event bus and the call journal."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.context import InterruptAnswer, InterruptRequest, JournalEntry
from engine.events import Log, RunEvent, StepStarted
from engine.journal import StoreJournal
from engine.spec import StepSpec, WorkflowDefinition
from engine.sqlite_file import StoreFileError, StoreWriteError
from engine.states import RunStatus, StepStatus
from engine.store import (
    BaseRunStore,
    InterruptClosed,
    InterruptRecord,
    OwnRow,
    RunStore,
    RunSummary,
    StepResult,
    UnknownRun,
)
from engine.store.ownership import this_process
from tests.stores import ALL, store_opener

WF = WorkflowDefinition(name="store_test", steps=[StepSpec(id="a", uses="demo.echo")])


@pytest.fixture(params=ALL)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseRunStore]:
    opened = store_opener(request.param, request, tmp_path)()
    yield opened
    opened.close()


def test_append_assigns_contiguous_seq_and_times(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {"x": 1}, "kahn", "test")
    stamped = [store.append(Log(run_id=run_id, message=f"m{i}")) for i in range(5)]
    assert [e.seq for e in stamped] == [1, 2, 3, 4, 5]
    assert all(b.mono >= a.mono for a, b in zip(stamped, stamped[1:]))
    assert all(e.ts > 0 for e in stamped)
    assert store.events(run_id) == stamped
    assert [e.seq for e in store.events(run_id, after_seq=3)] == [4, 5]


def test_seq_continues_after_reopening_the_file(tmp_path: Path) -> None:
    first = RunStore(tmp_path / "runs.sqlite")
    run_id = first.create_run(WF, {}, "kahn", "test")
    first.append(Log(run_id=run_id, message="before"))
    last_mono = first.append(Log(run_id=run_id, message="before")).mono
    first.close()
    second = RunStore(tmp_path / "runs.sqlite")
    event = second.append(Log(run_id=run_id, message="after"))
    assert event.seq == 3
    assert event.mono >= last_mono
    second.close()


def test_a_failed_batch_leaves_no_event_and_no_gap(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.create_run(WF, {}, "kahn", "test")
    store.append(Log(run_id=run_id, message="kept"))
    with pytest.raises(RuntimeError):
        with store.batch():
            store.append(Log(run_id=run_id, message="lost"))
            raise RuntimeError("boom")
    assert store.append(Log(run_id=run_id, message="next")).seq == 2
    assert [e.message for e in store.events(run_id)] == ["kept", "next"]  # type: ignore[union-attr]
    store.close()


class CommitOnFullDisk(RunStore):
    """A real SQLite store whose next COMMIT meets a full disk: SQLite ends the transaction
    itself and reports SQLITE_FULL, as it does when the WAL cannot grow."""

    full = False

    def _commit(self) -> None:
        if self.full:
            self.full = False
            self._db.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        super()._commit()


def test_a_failed_commit_leaves_no_event_and_no_gap(tmp_path: Path) -> None:
    """The batch's writes all succeed, then its COMMIT fails: the failure is the store's one
    line naming the file and what to do, nothing of the batch is kept, and the run's events
    go on numbered without a gap once the disk has room again."""
    store = CommitOnFullDisk(tmp_path / "runs.sqlite")
    run_id = store.create_run(WF, {}, "kahn", "test")
    store.append(Log(run_id=run_id, message="kept"))
    store.full = True
    with pytest.raises(StoreWriteError) as failed:
        with store.batch():
            store.append(Log(run_id=run_id, message="lost"))
            store.append(Log(run_id=run_id, message="lost too"))
    assert str(tmp_path / "runs.sqlite") in str(failed.value)
    assert "free disk space" in str(failed.value)
    after = [store.append(Log(run_id=run_id, message=text)) for text in ("next", "after")]
    assert [e.seq for e in after] == [2, 3]
    assert [e.message for e in store.events(run_id)] == ["kept", "next", "after"]  # type: ignore[union-attr]
    store.close()


def test_runs_are_listed_read_back_and_finished(store: BaseRunStore) -> None:
    first = store.create_run(WF, {"q": "a"}, "kahn", "acyclic", run_id="r1")
    store.create_run(WF, {}, "langgraph", "cycles", run_id="r2", parent="r1", forked_at="a")
    store.set_status(first, RunStatus.COMPLETED, "done", {"out": 1})
    record = store.get_run(first)
    assert record.definition == WF
    assert record.inputs == {"q": "a"}
    assert (record.status, record.reason, record.outputs) == (
        RunStatus.COMPLETED,
        "done",
        {"out": 1},
    )
    assert record.finished_ts is not None
    summaries = {s.run_id: s for s in store.list_runs()}
    assert summaries["r2"].parent_run_id == "r1" and summaries["r2"].forked_at == "a"
    assert summaries["r2"].engine == "langgraph"
    with pytest.raises(UnknownRun):
        store.get_run("nope")
    with pytest.raises(UnknownRun):
        store.set_status("nope", RunStatus.FAILED)


def test_runs_are_listed_newest_first_with_their_inputs(store: BaseRunStore) -> None:
    asks = WorkflowDefinition.model_validate(
        {**WF.model_dump(), "inputs": {"topic": {"type": "string"}, "depth": {}}}
    )
    for index in range(5):
        store.create_run(
            asks, {"depth": index, "topic": f"t{index}"}, "kahn", "x", run_id=f"r{index}"
        )
    store.set_status("r3", RunStatus.COMPLETED, "done", {"out": 3})

    runs = store.list_runs_with_inputs(limit=4)

    summaries = store.list_runs(limit=4)
    assert [r.model_dump(include=set(RunSummary.model_fields)) for r in runs] == [
        s.model_dump() for s in summaries
    ]
    assert [r.run_id for r in runs] == ["r4", "r3", "r2", "r1"]
    assert [r.inputs for r in runs] == [store.get_run(r.run_id).inputs for r in runs]
    assert {r.run_id: r.inputs["topic"] for r in runs} == {f"r{i}": f"t{i}" for i in range(1, 5)}
    assert all(r.declared_inputs == ["topic", "depth"] for r in runs)
    assert runs[1].status is RunStatus.COMPLETED


def test_runs_with_their_inputs_are_read_from_a_sqlite_file_in_one_select(tmp_path: Path) -> None:
    with RunStore(tmp_path / "runs.sqlite") as store:
        for index in range(30):
            store.create_run(WF, {"question": f"q{index}"}, "kahn", "x", run_id=f"r{index:02}")
    statements: list[str] = []
    with RunStore(tmp_path / "runs.sqlite") as reopened:
        reopened._db.set_trace_callback(statements.append)
        runs = reopened.list_runs_with_inputs(limit=25)
        reopened._db.set_trace_callback(None)
    assert len(runs) == 25 and runs[0].inputs == {"question": "q29"}
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 1


def test_the_last_event_of_a_kind_is_the_runs_latest_of_it(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    other = store.create_run(WF, {}, "kahn", "test")
    assert store.last_event(run_id, "log") is None
    store.append(Log(run_id=run_id, message="first"))
    store.append(Log(run_id=run_id, message="second"))
    store.append(StepStarted(run_id=run_id, step_id="a", iteration=0))
    store.append(Log(run_id=other, message="other run"))
    last = store.last_event(run_id, "log")
    assert isinstance(last, Log) and (last.message, last.seq) == ("second", 2)
    assert last == store.events(run_id)[1]
    assert store.last_event(run_id, "budget") is None
    started = store.last_event(run_id, "step_started")
    assert isinstance(started, StepStarted) and started.seq == 3


def test_engine_state_is_read_back_and_moves_the_update_time(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    created = store.get_run(run_id).updated_ts
    store.save_engine_state(run_id, {"step_runs": 3})
    store.save_engine_state(run_id, {"step_runs": 4})
    record = store.get_run(run_id)
    assert record.engine_state == {"step_runs": 4}
    assert record.updated_ts >= created
    assert [s.updated_ts for s in store.list_runs() if s.run_id == run_id] == [record.updated_ts]
    with pytest.raises(UnknownRun, match="'nope'"):
        store.save_engine_state("nope", {})


def test_a_run_stored_before_the_engine_states_table_keeps_its_engine_state(tmp_path: Path) -> None:
    """Files written when the resume state lived in the ``runs`` row still resume."""
    store = RunStore(tmp_path / "runs.sqlite")
    run_id = store.create_run(WF, {}, "kahn", "test")
    with store.batch():
        store._update_run(run_id, {"engine_state": {"step_runs": 2}})
    assert store.get_run(run_id).engine_state == {"step_runs": 2}
    store.save_engine_state(run_id, {"step_runs": 5})
    assert store.get_run(run_id).engine_state == {"step_runs": 5}
    store.close()


def test_an_events_body_leaves_out_its_columns_and_old_whole_bodies_still_read(
    tmp_path: Path,
) -> None:
    """Since schema version 2 a row's ``body`` holds what its columns do not; rows written at
    version 1 hold the whole event, and a file with both reads every event as it was
    stored, whatever its run id's characters."""
    path = tmp_path / "runs.sqlite"
    store = RunStore(path)
    run_id = store.create_run(WF, {}, "kahn", "test", run_id='run "quoted" \\ é')
    written = [
        store.append(Log(run_id=run_id, message="old")),
        store.append(StepStarted(run_id=run_id, step_id="a", iteration=2, inputs={"q": [1]})),
    ]
    store.close()
    with sqlite3.connect(path) as db:
        bodies = [body for (body,) in db.execute("SELECT body FROM events ORDER BY seq")]
        columns = ('"run_id"', '"seq"', '"mono"', '"kind"')
        assert not any(key in body for body in bodies for key in columns)
        db.execute(  # the first event as version 1 wrote it: the whole event
            "UPDATE events SET body = ? WHERE seq = 1", (written[0].model_dump_json(),)
        )
        db.execute("PRAGMA user_version=1")
    store = RunStore(path)
    written.append(store.append(Log(run_id=run_id, message="new")))
    assert store.events(run_id) == written
    assert store.events(run_id, after_seq=1) == written[1:]
    store.close()


ODD_IDS = ["b", 'quote"d', "back\\slash", "tab\tnew\nline\x01\x1f", "é ü", "☃ 🙂", "", "a" * 300]


@pytest.mark.parametrize(
    "first",
    [
        StepResult(step_id="a", status=StepStatus.PENDING),
        StepResult(step_id="a", status=StepStatus.RUNNING, iteration=1, outputs={"x": "é"}, runs=2),
        StepResult(step_id="a", status=StepStatus.SUCCEEDED, outputs={"x": 1}, runs=1),
        StepResult(step_id='"a', status=StepStatus.PENDING, routed_by=["r"], reason="why"),
    ],
)
def test_rows_saved_alike_are_each_stored_as_if_saved_one_by_one(
    store: BaseRunStore, first: StepResult
) -> None:
    together = store.create_run(WF, {}, "kahn", "test")
    one_by_one = store.create_run(WF, {}, "kahn", "test")
    store.save_alike(together, first, iter(ODD_IDS))
    for row in [first, *(first.model_copy(update={"step_id": s}) for s in ODD_IDS)]:
        store.save_step(one_by_one, row)
    stored = store.step_results(together)
    assert sorted(stored) == sorted([first.step_id, *ODD_IDS])
    assert stored == store.step_results(one_by_one)
    assert stored["☃ 🙂"].step_id == "☃ 🙂" and stored["☃ 🙂"].status == first.status


@pytest.mark.parametrize("status", list(StepStatus))
def test_a_row_saved_from_its_fields_is_stored_as_its_model(
    store: BaseRunStore, status: StepStatus
) -> None:
    """``save_row`` (the step runner's own rows, written from their fields where the store
    can) stores what ``save_step`` of the row's model stores: the latest row and, once
    settled, its iteration's history row — in the same transaction and inside an open one."""
    by_row = store.create_run(WF, {}, "kahn", "test")
    by_model = store.create_run(WF, {}, "kahn", "test")
    first = {
        "step_id": "a",
        "status": "SUCCEEDED",
        "iteration": 0,
        "outputs": {"v": 0},
        "reason": "",
        "routed_by": [],
        "not_routed_by": [],
        "runs": 1,
        "history": [],
    }
    then = {
        **first,
        "status": status.value,
        "iteration": 1,
        "outputs": {"v": "é"},
        "reason": "why",
        "routed_by": ["r"],
        "runs": 2,
    }
    store.save_row(by_row, OwnRow(first, StepStatus.SUCCEEDED))
    with store.batch():
        store.save_row(by_row, OwnRow(then, status))
    store.save_step(by_model, OwnRow(first, StepStatus.SUCCEEDED).model())
    store.save_step(by_model, OwnRow(then, status).model())
    stored = store.step_results(by_row)
    assert stored == store.step_results(by_model)
    assert [h.iteration for h in stored["a"].history] == [0, 1][: 1 + status.settled]


def test_step_results_keep_every_settled_iteration(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    store.save_step(
        run_id, StepResult(step_id="a", status=StepStatus.SUCCEEDED, outputs={"v": 0}, runs=1)
    )
    store.save_step(
        run_id,
        StepResult(step_id="a", status=StepStatus.PENDING, iteration=1, outputs={"v": 0}, runs=1),
    )
    store.save_step(
        run_id,
        StepResult(
            step_id="a",
            status=StepStatus.SUCCEEDED,
            iteration=1,
            outputs={"v": 1},
            routed_by=["r"],
            runs=2,
        ),
    )
    result = store.step_results(run_id)["a"]
    assert (result.status, result.iteration, result.outputs, result.routed_by) == (
        StepStatus.SUCCEEDED,
        1,
        {"v": 1},
        ["r"],
    )
    assert [(h.iteration, h.outputs) for h in result.history] == [(0, {"v": 0}), (1, {"v": 1})]


def test_journal_replays_another_run_and_copies_what_it_replayed(store: BaseRunStore) -> None:
    source = store.create_run(WF, {}, "kahn", "test")
    shadow = store.create_run(WF, {}, "langgraph", "shadow")
    entry = JournalEntry(kind="llm", payload={"content": "hi"})
    StoreJournal(store).put(source, "a", 0, 0, entry)
    journal = StoreJournal(store, replay_from=source)
    assert journal.get(shadow, "a", 0, 0) == entry
    assert store.journal_get(shadow, "a", 0, 0) == entry
    assert journal.get(shadow, "a", 0, 1) is None
    assert StoreJournal(store).get(shadow, "a", 1, 0) is None


def test_interrupt_answers_are_stored_until_the_engine_consumes_them(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    request = InterruptRequest(prompt="ok?", options=["approve", "reject"])
    store.add_interrupt(
        InterruptRecord(interrupt_id="i1", run_id=run_id, step_id="a", request=request)
    )
    assert [r.interrupt_id for r in store.pending_interrupts(run_id)] == ["i1"]
    answered = store.record_answer("i1", InterruptAnswer(action="reject", note="no"))
    assert answered.status == "answered"
    assert store.pending_interrupts(run_id) == []
    stored = store.get_interrupt("i1")
    assert stored is not None and stored.answer == InterruptAnswer(action="reject", note="no")
    assert stored.request == request
    with pytest.raises(LookupError):
        store.record_answer("missing", InterruptAnswer())


@pytest.mark.parametrize("kind", ALL)
def test_of_two_answers_racing_to_one_prompt_exactly_one_is_stored(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Two handles (two servers, or the app and a server) answer each prompt at once: one
    answer is stored, the other is refused, and nothing of the refused one is kept."""
    opener = store_opener(kind, request, tmp_path)
    first, second = opener(), opener()
    run_id = first.create_run(WF, {}, "kahn", "test")
    prompts = [f"i{n}" for n in range(5)]
    for interrupt_id in prompts:
        first.add_interrupt(
            InterruptRecord(
                interrupt_id=interrupt_id,
                run_id=run_id,
                step_id="a",
                request=InterruptRequest(prompt="ok?"),
            )
        )
    for interrupt_id in prompts:
        outcomes = _race_answers(interrupt_id, {"first": first, "second": second})
        won = [note for note, got in outcomes.items() if isinstance(got, InterruptRecord)]
        lost = [got for got in outcomes.values() if isinstance(got, InterruptClosed)]
        assert len(won) == 1 and len(lost) == 1, outcomes
        assert str(lost[0]) == (
            f"interrupt {interrupt_id} of run {run_id} is answered already;"
            " each prompt takes one answer"
        )
        stored = second.get_interrupt(interrupt_id)
        assert stored is not None and stored.answer is not None
        assert stored.answer.note == won[0]
    first.close()
    second.close()


def _race_answers(
    interrupt_id: str, handles: dict[str, BaseRunStore]
) -> dict[str, InterruptRecord | InterruptClosed]:
    """Each handle answers ``interrupt_id`` (its name as the note) at once, from its own
    thread released by one barrier: what each got back."""
    barrier = threading.Barrier(len(handles))
    outcomes: dict[str, InterruptRecord | InterruptClosed] = {}

    def answer(note: str, handle: BaseRunStore) -> None:
        barrier.wait()
        try:
            outcomes[note] = handle.record_answer(
                interrupt_id, InterruptAnswer(action="approve", note=note)
            )
        except InterruptClosed as refused:
            outcomes[note] = refused

    racers = [threading.Thread(target=answer, args=item) for item in handles.items()]
    for racer in racers:
        racer.start()
    for racer in racers:
        racer.join()
    return outcomes


def test_subscribers_get_every_event_once_in_order(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    other = store.create_run(WF, {}, "kahn", "test")
    everything: list[RunEvent] = []
    only_run: list[RunEvent] = []
    stop_all = store.subscribe(everything.extend)
    stop_one = store.subscribe(only_run.extend, run_id=run_id)
    for i in range(20):
        store.append(Log(run_id=run_id if i % 2 else other, message=str(i)))
    stop_all()
    stop_one()
    assert [e.message for e in everything] == [str(i) for i in range(20)]  # type: ignore[union-attr]
    assert [e.seq for e in only_run] == list(range(1, 11))


def test_a_failing_subscriber_is_logged_and_nobody_loses_an_event(
    store: BaseRunStore, caplog: pytest.LogCaptureFixture
) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    healthy: list[RunEvent] = []
    seen_by_broken: list[int] = []

    def broken(batch: list[RunEvent]) -> None:
        seen_by_broken.extend(event.seq for event in batch)
        raise RuntimeError("the panel is gone")

    with caplog.at_level(logging.ERROR, logger="engine.bus"):
        stop_broken = store.subscribe(broken, run_id=run_id)
        stop_healthy = store.subscribe(healthy.extend, run_id=run_id)
        for i in range(5):
            store.append(Log(run_id=run_id, message=str(i)))
        stop_broken()
        stop_healthy()
    assert [e.seq for e in healthy] == [1, 2, 3, 4, 5]
    assert seen_by_broken == [1, 2, 3, 4, 5]
    assert caplog.records and all(
        "failed on a batch" in r.getMessage() and r.exc_info for r in caplog.records
    )
    assert "RuntimeError: the panel is gone" in caplog.text


def test_a_slow_subscriber_gets_coalesced_batches_and_never_blocks_the_writer(
    store: BaseRunStore,
) -> None:
    """The callback is held on its first batch while the writer appends 200 events:
    every append returns (the writer is not blocked), then the subscriber catches
    up from the store in a few batches, each event once, in order."""
    store.bus._max_pending = 10  # a small bound, so this test overflows it
    run_id = store.create_run(WF, {}, "kahn", "test")
    release = threading.Event()
    entered = threading.Event()
    batches: list[list[RunEvent]] = []

    def slow(batch: list[RunEvent]) -> None:
        batches.append(batch)
        entered.set()
        release.wait()

    unsubscribe = store.subscribe(slow, run_id=run_id)
    store.append(StepStarted(run_id=run_id, step_id="a"))
    assert entered.wait(10)
    for i in range(200):
        store.append(Log(run_id=run_id, message=str(i)))
    release.set()
    unsubscribe()
    seqs = [event.seq for batch in batches for event in batch]
    assert seqs == list(range(1, 202))
    assert len(batches) < 20


def test_a_step_iterations_journal_is_listed_in_call_order(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    for index in (2, 0, 1):
        store.journal_put(run_id, "a", 0, index, JournalEntry(kind=f"k{index}", payload=[index]))
    store.journal_put(run_id, "a", 1, 0, JournalEntry(kind="later", payload=None))
    store.journal_put(run_id, "b", 0, 0, JournalEntry(kind="other", payload=None))
    assert [(i, e.kind, e.payload) for i, e in store.journal_entries(run_id, "a", 0)] == [
        (0, "k0", [0]),
        (1, "k1", [1]),
        (2, "k2", [2]),
    ]
    assert store.journal_entries(run_id, "c", 0) == []


@pytest.mark.parametrize("how", ["append", "append_new"])
def test_after_a_claim_the_next_event_continues_the_runs_seq_and_time(
    store: BaseRunStore, how: str
) -> None:
    """A claim forgets what the store knew of the run's last event (another holder may have
    appended); the next one is read back: its seq follows on, its time does not go back —
    after events of the engine's own values too (written from their fields in memory)."""
    run_id = store.create_run(WF, {}, "kahn", "test")
    if how == "append_new":
        store.append_new(Log, run_id=run_id, message="one")
        store.append_new(Log, run_id=run_id, message="two")
        first, second = store.events(run_id)
    else:
        first = store.append(Log(run_id=run_id, message="one"))
        second = store.append(Log(run_id=run_id, message="two"))
    store.claim(run_id)
    third = store.append(Log(run_id=run_id, message="three"))
    assert (first.seq, second.seq, third.seq) == (1, 2, 3)
    assert third.mono >= second.mono


@pytest.mark.parametrize("how", ["append", "append_new", "save_step", "save_row"])
def test_a_write_from_another_thread_waits_for_the_open_batch(
    store: BaseRunStore, how: str
) -> None:
    """A batch holds the writer: another thread's write (an event, or one of the engine's own
    values) neither joins it nor slips in between its writes; it lands after the batch commits."""
    run_id = store.create_run(WF, {}, "kahn", "test")
    inside, release, written = threading.Event(), threading.Event(), threading.Event()

    def hold() -> None:
        with store.batch():
            store.append(Log(run_id=run_id, message="first"))
            inside.set()
            release.wait(10)
            store.append(Log(run_id=run_id, message="second"))

    def other() -> None:
        if how == "append":
            store.append(Log(run_id=run_id, message="other"))
        elif how == "append_new":
            store.append_new(Log, run_id=run_id, message="other")
        elif how == "save_step":
            store.save_step(run_id, StepResult(step_id="other", status=StepStatus.SUCCEEDED))
        else:
            row = StepResult(step_id="other", status=StepStatus.SUCCEEDED).model_dump(mode="json")
            store.save_row(run_id, OwnRow(row, StepStatus.SUCCEEDED))
        written.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    writer = threading.Thread(target=other)
    writer.start()
    assert not written.wait(0.3)  # still waiting for the batch (it never gets in earlier)
    release.set()
    holder.join(10)
    writer.join(10)
    messages = [e.message for e in store.events(run_id)]  # type: ignore[union-attr]
    if how in ("save_step", "save_row"):
        assert messages == ["first", "second"] and list(store.step_results(run_id)) == ["other"]
    else:
        assert messages == ["first", "second", "other"]


def test_an_event_of_the_engines_own_values_outside_a_batch_is_committed_at_once(
    store: BaseRunStore,
) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    store.append_new(Log, run_id=run_id, message="alone")
    assert [(e.seq, e.message) for e in store.events(run_id)] == [(1, "alone")]  # type: ignore[union-attr]


def test_a_new_run_names_this_process_as_its_owner_from_its_creation(store: BaseRunStore) -> None:
    run_id = store.create_run(WF, {}, "kahn", "test")
    record = store.get_run(run_id)
    assert record.owner is not None
    assert record.owner.token == this_process().token
    assert record.owner.claimed_ts == record.created_ts


def test_the_sqlite_store_stamps_runs_and_events_with_the_clocks_it_is_given(
    tmp_path: Path,
) -> None:
    readings = iter([100.0, 100.0, 102.5])
    with RunStore(
        tmp_path / "runs.sqlite", clock=lambda: 1234.5, monotonic=lambda: next(readings)
    ) as store:
        run_id = store.create_run(WF, {}, "kahn", "test")
        first = store.append(Log(run_id=run_id, message="first"))
        second = store.append(Log(run_id=run_id, message="second"))
        assert store.get_run(run_id).created_ts == 1234.5
    assert [(event.ts, event.mono) for event in (first, second)] == [(1234.5, 0.0), (1234.5, 2.5)]


def test_events_of_the_engines_own_values_are_stamped_where_the_stored_run_stands(
    tmp_path: Path,
) -> None:
    """``append_new`` in a handle that has not seen the run yet (a resume in another process)
    goes on from the run's last stored event, and its later events, stamped without reading
    the store, keep counting seq and the run's seconds from the same start."""
    path = tmp_path / "runs.sqlite"
    with RunStore(path, clock=lambda: 10.0, monotonic=lambda: 50.0) as first:
        run_id = first.create_run(WF, {}, "kahn", "test")
        first.append(Log(run_id=run_id, message="one"))
        first.append(Log(run_id=run_id, message="two"))
    readings = iter([200.0, 201.5, 204.0, 207.0])
    with RunStore(path, clock=lambda: 20.0, monotonic=lambda: next(readings)) as second:
        second.append_new(Log, run_id=run_id, message="three")
        with second.batch():
            second.append_new(Log, run_id=run_id, message="four")
            second.append_new(Log, run_id=run_id, message="five")
        stamped = [(e.seq, e.ts, e.mono) for e in second.events(run_id)]
    assert stamped == [
        (1, 10.0, 0.0),
        (2, 10.0, 0.0),
        (3, 20.0, 1.5),
        (4, 20.0, 4.0),
        (5, 20.0, 7.0),
    ]


def test_a_file_that_is_not_a_run_store_is_refused_in_one_line_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    path.write_bytes(b"not a database\n" * 100)
    with pytest.raises(
        StoreFileError,
        match=r"runs\.sqlite: cannot open the run store \(.*\) — it is not a run store or it is"
        r" damaged",
    ):
        RunStore(path)
    assert path.read_bytes() == b"not a database\n" * 100
