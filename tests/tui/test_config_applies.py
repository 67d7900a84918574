"""The config file is applied, not just parsed: runs use its router and corpus sections, every command reads
the same file (``--config``, ``$WORKBENCH_CONFIG``, the default), and a bad file is one line, exit code 2.

Real components throughout: the loopback fault server answering with the extractive model, the SQLite
corpus and run store, the ``workbench`` command through click's runner.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from engine.context import InterruptAnswer, InterruptRequest
from engine.events import InterruptRaised
from engine.run_inputs import resolve_inputs
from engine.states import RunStatus
from engine.store import RunStore
from research.corpus import Corpus
from router.fault.demo import demo_router_config
from router.fault.server import FaultServer
from tui.cli import cli
from tui.config import ConfigError, WorkbenchConfig, load_config
from tui.launch.run import open_run
from tui.launch.run_driver import EventInbox
from tui.launch.steps import load_workflow_file
from tui.launch.wiring import extractive_responder, index_config_folders, open_corpus
from tui.launch.workbench import SHIPPED_WORKFLOWS, Workbench
from tui.launch.workspace import Workspace

DEEP_RESEARCH = SHIPPED_WORKFLOWS / "deep_research.yaml"
ZEBRA = "Zebra herds in the Serengeti migrate with the rains; the quagga stripe pattern confuses predators."
PROVIDER_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_ENDPOINT",
    "GITHUB_TOKEN",
    "OLLAMA_HOST",
)


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace whose default collection is built once for the module."""
    path = tmp_path_factory.mktemp("workspace")
    open_corpus(Workspace(path), settings=WorkbenchConfig()).close()
    return path


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("config-notes") / "notes"
    folder.mkdir()
    (folder / "zebra.md").write_text(f"# Zebra migration\n\n{ZEBRA}\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer.running(responder=extractive_responder()) as running:
        yield running


@pytest.fixture
def config_file(tmp_path: Path, notes: Path, server: FaultServer) -> Path:
    path = tmp_path / "config.yaml"
    section = {
        "router": demo_router_config(server.base_url, ["openai"]),
        "corpus": {"folders": [str(notes)]},
    }
    path.write_text(yaml.safe_dump(section, sort_keys=False), encoding="utf-8")
    return path


def workbench(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def one_line_error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ")
    return lines[0]


def rag_sources(store: RunStore, run_id: str) -> set[str]:
    chunks = store.step_results(run_id)["rag_package"].outputs["chunks"]
    return {chunk["id"].split("#")[0] for chunk in chunks}


def test_a_headless_run_uses_the_files_provider_and_corpus_folder(
    workspace: Path, config_file: Path, server: FaultServer
) -> None:
    server.clear_requests()
    result = workbench(
        "--workspace",
        str(workspace),
        "--config",
        str(config_file),
        "run",
        str(DEEP_RESEARCH),
        "--headless",
        "--on-interrupt",
        "default",
        "-i",
        "query=How do zebra herds migrate?",
        "-i",
        "max_rounds=1",
    )
    assert result.exit_code == 0, result.output
    chat = server.requests_for("openai", "chat")
    assert chat and all(r.api_path == "/v1/chat/completions" for r in chat)
    with RunStore(workspace / "runs.sqlite") as store:
        run = store.list_runs(1)[0]
        assert run.status == RunStatus.COMPLETED
        assert "notes/zebra" in rag_sources(store, run.run_id)


async def approve(event: InterruptRaised, request: InterruptRequest) -> InterruptAnswer:
    return (request.default or InterruptAnswer(action="approve")).model_copy(
        update={"automatic": True}
    )


async def test_a_run_started_from_the_app_uses_the_loaded_config(
    workspace: Path, config_file: Path, server: FaultServer
) -> None:
    server.clear_requests()
    bench = Workbench(workspace=workspace, config=load_config(config_file))
    inputs = resolve_inputs(
        load_workflow_file(DEEP_RESEARCH, bench.files),
        {"query": "How do zebra herds migrate?", "max_rounds": 1},
    )
    job = bench.new_run_job(DEEP_RESEARCH, inputs)
    try:
        result = await job(approve, EventInbox())
        assert result.status == RunStatus.COMPLETED
        assert server.requests_for("openai", "chat")
        assert "notes/zebra" in rag_sources(bench.store(), result.run_id)
    finally:
        bench.close()


async def test_the_apps_runs_get_the_files_router(workspace: Path, config_file: Path) -> None:
    bench = Workbench(workspace=workspace, config=load_config(config_file))
    async with open_run(
        bench.files,
        load_workflow_file(DEEP_RESEARCH, bench.files),
        inputs={},
        responder=approve,
        settings=bench.config,
    ) as run:
        assert run.router is not None and run.context.retriever is not None
        names = [snapshot.name for snapshot in run.router.snapshot()]
        hits = await run.context.retriever.search("quagga stripe predators")
    assert "openai" in names
    assert hits and hits[0]["source_id"] == "notes/zebra"


def test_corpus_search_finds_a_folder_of_the_file_named_by_the_environment(
    workspace: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "field-notes"
    folder.mkdir()
    (folder / "okapi.md").write_text(
        "# Okapi\n\nThe okapi is a forest giraffe of the Ituri rainforest.\n", encoding="utf-8"
    )
    path = tmp_path / "env-config.yaml"
    path.write_text(f"corpus:\n  folders: [{folder}]\n", encoding="utf-8")
    result = workbench(
        "--workspace",
        str(workspace),
        "corpus",
        "search",
        "okapi Ituri",
        env={"WORKBENCH_CONFIG": str(path)},
    )
    assert result.exit_code == 0, result.output
    assert "field-notes/okapi" in result.output and "Ituri" in result.output


def test_a_router_mistake_stops_a_run_with_one_line(workspace: Path, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "theme: nord\nrouter:\n  providers:\n    - name: mine\n      kind: opena\n      model: m\n",
        encoding="utf-8",
    )
    result = workbench(
        "--workspace",
        str(workspace),
        "--config",
        str(path),
        "run",
        str(DEEP_RESEARCH),
        "--headless",
        "--on-interrupt",
        "default",
        "-i",
        "query=anything",
    )
    line = one_line_error(result)
    assert line.startswith(f"error: {path}:5: router.providers[0].kind: Input should be 'openai'")


def test_validate_reads_no_config_and_the_run_commands_stop_on_a_broken_one(tmp_path: Path) -> None:
    """validate reads no config; the commands that read runs do (its ``store:`` says where
    they are), so a broken file is their one-line error rather than another store's runs."""
    broken = tmp_path / "config.yaml"
    broken.write_text("router: [\n", encoding="utf-8")
    base = ("--workspace", str(tmp_path / "ws"), "--config", str(broken))
    assert workbench(*base, "validate", str(DEEP_RESEARCH)).exit_code == 0
    assert one_line_error(workbench(*base, "runs", "list")).startswith(f"error: {broken}:")
    assert one_line_error(workbench(*base, "providers")).startswith(f"error: {broken}:")


def test_providers_lists_the_files_provider(tmp_path: Path, config_file: Path) -> None:
    result = workbench(
        "--workspace", str(tmp_path), "--config", str(config_file), "providers", "--json"
    )
    assert result.exit_code == 0, result.output
    snapshots: list[dict[str, Any]] = json.loads(result.output)
    assert [(s["name"], s["kind"]) for s in snapshots if s["name"] != "builtin"] == [
        ("openai", "openai")
    ]
    table = workbench("--workspace", str(tmp_path), "--config", str(config_file), "providers")
    assert "openai" in table.output and "CLOSED" in table.output


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    missing = tmp_path / "typo.yaml"
    line = one_line_error(
        workbench("--workspace", str(tmp_path), "--config", str(missing), "providers")
    )
    assert line == f"error: {missing}: no such config file; check the --config path"


def test_config_folders_are_indexed_once_per_process(tmp_path: Path) -> None:
    first, second = tmp_path / "a" / "notes", tmp_path / "b" / "notes"
    for folder, word in ((first, "aardvark"), (second, "pangolin")):
        folder.mkdir(parents=True)
        (folder / f"{word}.md").write_text(
            f"# {word}\n\nThe {word} eats ants at night.\n", encoding="utf-8"
        )
    settings = WorkbenchConfig.model_validate({"corpus": {"folders": [str(first), str(second)]}})
    with Corpus(tmp_path / "corpus.sqlite") as corpus:
        reports = index_config_folders(corpus, settings)
        assert [(r.collection.split("-")[0], r.added) for r in reports] == [
            ("notes", 1),
            ("notes", 1),
        ]
        assert reports[0].collection != reports[1].collection
        assert index_config_folders(corpus, settings) == []
        found = {hit["source_id"].split("/")[-1] for hit in corpus.search("ants night", limit=10)}
    assert found == {"aardvark", "pangolin"}


def test_a_missing_corpus_folder_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"corpus:\n  folders: [{tmp_path / 'gone'}]\n", encoding="utf-8")
    with Corpus(tmp_path / "corpus.sqlite") as corpus, pytest.raises(ConfigError) as caught:
        index_config_folders(corpus, load_config(path))
    assert str(caught.value) == (
        f"{path}: corpus.folders: {tmp_path / 'gone'} is not a folder; "
        "create it or remove it from the list"
    )
