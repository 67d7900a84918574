"""The workspace's layout: one folder holding a person's runs, corpus, provider statistics,
checkpoints and workflows — and the one place that names each file in it.

The app chooses the folder (``--workspace``, ``$WORKBENCH_HOME`` or the platform's user data
dir: tui/launch/workspace.py) and hands the engine, the router and research the paths they
need; none of them spells a file name. A part given only a folder where the others live (the
LangGraph engine finds its checkpoints beside the run store, the router its statistics in a
workspace folder) asks a :class:`Workspace` of that folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RUNS_FILE = "runs.sqlite"
CORPUS_FILE = "corpus.sqlite"
CHECKPOINTS_FILE = "checkpoints.sqlite"
PROVIDER_STATS_FILE = "provider_stats.sqlite3"
RUN_FOLDERS = "runs"
USER_WORKFLOWS = "workflows"
EXPORTS = "exports"
REPORT_FILE = "report.md"
QUALITY_FILE = "quality.yaml"
RAG_PACKAGE_FILE = "rag_package.jsonl"


@dataclass(frozen=True)
class RunFolder:
    """The files one run delivers (research's report and its metadata, the RAG package)."""

    path: Path

    @property
    def report(self) -> Path:
        """The final report (Markdown)."""
        return self.path / REPORT_FILE

    @property
    def quality(self) -> Path:
        """The report's quality metadata (YAML)."""
        return self.path / QUALITY_FILE

    @property
    def rag_package(self) -> Path:
        """The cited passages as chunks, one JSON object a line."""
        return self.path / RAG_PACKAGE_FILE


@dataclass(frozen=True)
class Workspace:
    """A workspace folder and the files in it."""

    root: Path

    @property
    def runs_db(self) -> Path:
        """The run store (every run's events, results and interrupts)."""
        return self.root / RUNS_FILE

    @property
    def corpus_db(self) -> Path:
        """The research corpus (SQLite FTS5)."""
        return self.root / CORPUS_FILE

    @property
    def checkpoints_db(self) -> Path:
        """LangGraph's checkpoints, apart from the run store so neither holds the other's lock."""
        return self.root / CHECKPOINTS_FILE

    @property
    def provider_stats_db(self) -> Path:
        """The router's provider statistics and breaker states, shared by every process."""
        return self.root / PROVIDER_STATS_FILE

    @property
    def run_folders(self) -> Path:
        """Where runs write their artifacts, one folder per run id."""
        return self.root / RUN_FOLDERS

    def run_folder(self, run_id: str) -> Path:
        return self.run_folders / run_id

    def run_files(self, run_id: str) -> RunFolder:
        return RunFolder(self.run_folder(run_id))

    @property
    def workflows(self) -> Path:
        """The person's own workflow files, listed beside the shipped ones."""
        return self.root / USER_WORKFLOWS

    @property
    def exports(self) -> Path:
        """Where the app saves what a person exports (a report, say)."""
        return self.root / EXPORTS
