"""The run API's contract over real HTTP to a real `workbench server` process on PostgreSQL:
every route refuses a request without the server's token, each route answers with the
store's own models, and every failure is one line of JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from engine.context import InterruptAnswer
from engine.events import event_from_json
from engine.store import InterruptRecord, RunInputs, RunRecord, StepResult
from tests.server.runs import reporting_workflow, run_workflow, shipped
from tests.server.serving import ServerProcess
from tui.launch.workspace import Workspace

OPENAPI_DOC = Path(__file__).resolve().parents[2] / "docs" / "api" / "openapi.json"
OPEN_ROUTES = {("get", "/v1/health")}


def _filled(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def _routes(api: httpx.Client) -> list[tuple[str, str]]:
    document = api.get("/openapi.json").json()
    return [
        (method, path)
        for path, operations in document["paths"].items()
        for method in operations
        if (method, path) not in OPEN_ROUTES
    ]


def test_every_route_refuses_a_request_without_the_token(
    server: ServerProcess, api: httpx.Client
) -> None:
    routes = _routes(api)
    assert len(routes) >= 12
    for headers in ({}, {"Authorization": "Bearer not-the-token"}, {"Authorization": "Basic x"}):
        for method, path in routes:
            answer = httpx.request(method, server.url + _filled(path), headers=headers, json={})
            assert answer.status_code == 401, (method, path, headers)
            assert answer.headers["www-authenticate"] == "Bearer"
            assert answer.json() == {"error": answer.json()["error"]}
            assert "Authorization: Bearer" in answer.json()["error"]
    assert httpx.get(f"{server.url}/v1/health").json() == {"status": "ok", "listening": True}


def test_runs_are_listed_and_read_as_the_store_keeps_them(
    api: httpx.Client, pg_database: str, workspace: Workspace
) -> None:
    done = run_workflow(pg_database, workspace, shipped("fan_out", workspace))
    waiting = run_workflow(pg_database, workspace, shipped("approval", workspace))

    listed = [RunInputs.model_validate(run) for run in api.get("/v1/runs").json()]
    assert [run.run_id for run in listed] == [waiting, done]
    assert [run.status.value for run in listed] == ["WAITING", "COMPLETED"]
    assert len(api.get("/v1/runs", params={"limit": 1}).json()) == 1

    record = RunRecord.model_validate(api.get(f"/v1/runs/{done}").json())
    assert (record.workflow, record.status.value) == ("fan_out", "COMPLETED")
    assert record.definition.name == "fan_out"

    steps = {
        k: StepResult.model_validate(v) for k, v in api.get(f"/v1/runs/{done}/steps").json().items()
    }
    assert steps and all(step.status.value == "SUCCEEDED" for step in steps.values())

    page = api.get(f"/v1/runs/{done}/events", params={"limit": 3}).json()
    events = [event_from_json(json.dumps(e)) for e in page["events"]]
    assert [e.seq for e in events] == [1, 2, 3] and page["more"] is True
    rest = api.get(f"/v1/runs/{done}/events", params={"after": 3, "limit": 5000}).json()
    assert rest["more"] is False and rest["events"][0]["seq"] == 4
    assert rest["events"][-1]["kind"] == "run_finished"

    [pending] = [
        InterruptRecord.model_validate(i) for i in api.get(f"/v1/runs/{waiting}/interrupts").json()
    ]
    assert pending.status == "pending" and pending.request.prompt == "Approve the plan?"
    again = api.get(f"/v1/interrupts/{pending.interrupt_id}").json()
    assert InterruptRecord.model_validate(again) == pending


def test_a_prompt_takes_one_answer(
    api: httpx.Client, pg_database: str, workspace: Workspace
) -> None:
    waiting = run_workflow(pg_database, workspace, shipped("approval", workspace))
    [pending] = api.get(f"/v1/runs/{waiting}/interrupts").json()
    url = f"/v1/interrupts/{pending['interrupt_id']}/answer"

    answered = api.post(url, json=InterruptAnswer(action="reject").model_dump(mode="json"))
    assert answered.status_code == 200
    assert InterruptRecord.model_validate(answered.json()).answer == InterruptAnswer(
        action="reject"
    )
    twice = api.post(url, json={"action": "approve"})
    assert twice.status_code == 409
    assert twice.json()["error"].endswith("is answered already; each prompt takes one answer")


def test_the_journal_report_providers_and_workflows(
    api: httpx.Client, pg_database: str, workspace: Workspace, tmp_path: Path
) -> None:
    reported = run_workflow(pg_database, workspace, reporting_workflow(tmp_path, workspace))
    report = api.get(f"/v1/runs/{reported}/report")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/markdown")
    assert report.text == "# Findings\n\nThe answer is 42."

    done = run_workflow(pg_database, workspace, shipped("fan_out", workspace))
    none = api.get(f"/v1/runs/{done}/report")
    assert none.status_code == 404
    assert none.json()["error"].startswith(f"run {done} has no report (it is COMPLETED;")
    assert api.get(f"/v1/runs/{done}/journal", params={"step": "split"}).json() == []

    providers = api.get("/v1/providers").json()
    assert [p["name"] for p in providers] == ["builtin"]
    assert providers[0]["state"] == "CLOSED"

    names = {w["name"]: w for w in api.get("/v1/workflows").json()}
    assert {"approval", "fan_out", "deep_research"} <= set(names)
    assert names["deep_research"]["inputs"]["query"]["required"] is True


def _error(answer: httpx.Response) -> str:
    body: dict[str, Any] = answer.json()
    line = body["error"]
    assert isinstance(line, str) and "\n" not in line and line
    return line


def test_failures_are_one_line_of_json(api: httpx.Client) -> None:
    unknown = api.get("/v1/runs/no-such-run")
    assert (unknown.status_code, _error(unknown)) == (404, "no run 'no-such-run' in the run store")
    assert api.get("/v1/runs/no-such-run/events/stream").status_code == 404
    assert _error(api.get("/v1/interrupts/nope")) == "no interrupt 'nope' in the run store"

    bad_id = api.get("/v1/runs/no-such-run/events/stream", headers={"Last-Event-ID": "abc"})
    assert bad_id.status_code == 400
    assert _error(bad_id) == "Last-Event-ID 'abc' is not an event id of this server (a seq)"

    not_an_answer = api.post("/v1/interrupts/x/answer", json={"action": "maybe"})
    assert not_an_answer.status_code == 422
    assert _error(not_an_answer).startswith("action: Input should be 'approve', 'reject',")

    huge = api.post(
        "/v1/interrupts/x/answer",
        content=b"{" + b" " * 6_000_000 + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert huge.status_code == 413
    assert _error(huge).startswith("the request body is larger than 5 MB")

    assert _error(api.get("/v1/nothing-here")) == "Not Found"
    assert _error(api.get("/v1/runs", params={"limit": 0})).startswith(
        "query.limit: Input should be"
    )


def test_the_openapi_document_in_the_docs_is_the_servers(api: httpx.Client) -> None:
    served = api.get("/openapi.json").json()
    assert json.loads(OPENAPI_DOC.read_text(encoding="utf-8")) == served, (
        "docs/api/openapi.json is out of date: python -m tui.server.openapi > docs/api/openapi.json"
    )
