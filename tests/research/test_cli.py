"""`workbench research` and `workbench corpus` through the real click CLI on a temporary workspace."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from tests.research.test_corpus import HTML, MARKDOWN, RST, TEXT
from tui.cli import cli


def docs(tmp_path: Path) -> Path:
    root = tmp_path / "widgets"
    root.mkdir()
    (root / "spec.rst").write_text(RST)
    (root / "guide.md").write_text(MARKDOWN)
    (root / "news.html").write_text(HTML)
    (root / "notes.txt").write_text(TEXT)
    (root / "blob.txt").write_bytes(b"\x00\x00binary")
    return root


def test_corpus_add_list_search(tmp_path: Path) -> None:
    runner = CliRunner()
    workspace = str(tmp_path / "ws")
    added = runner.invoke(cli, ["--workspace", workspace, "corpus", "add", str(docs(tmp_path))])
    assert added.exit_code == 0, added.output
    assert (
        "widgets: 4 added" in added.output
        and "skipped" in added.output
        and "blob.txt" in added.output
    )
    listed = runner.invoke(cli, ["--workspace", workspace, "corpus", "list"])
    assert listed.exit_code == 0 and "widgets" in listed.output and "python-docs" in listed.output
    found = runner.invoke(
        cli,
        [
            "--workspace",
            workspace,
            "corpus",
            "search",
            "frobnicated widgets",
            "--collection",
            "widgets",
        ],
    )
    assert found.exit_code == 0 and "widgets/spec" in found.output
    missing = runner.invoke(
        cli, ["--workspace", workspace, "corpus", "add", str(tmp_path / "nope")]
    )
    assert (
        missing.exit_code == 2
        and "not a folder" in missing.output
        and "Traceback" not in missing.output
    )


def test_research_headless_writes_the_run_folder_and_sensitivity_reads_it(tmp_path: Path) -> None:
    runner = CliRunner()
    workspace = tmp_path / "ws"
    # The question may stand anywhere among the options, as with any command line.
    result = runner.invoke(
        cli,
        [
            "--workspace",
            str(workspace),
            "research",
            "--corpus",
            str(docs(tmp_path)),
            "--headless",
            "--as-of",
            "2025-06-30",
            "how are widgets frobnicated",
            "--domain",
            "reference",
            "--max-rounds",
            "2",
            "--on-interrupt",
            "default",
        ],
    )
    assert "report:" in result.output, result.output
    run_id = re.search(
        r"runs/(\d{8}-\d{6}-[0-9a-f]+)/report\.md", result.output.replace("\n", "")
    ).group(1)
    folder = workspace / "runs" / run_id
    quality = yaml.safe_load((folder / "quality.yaml").read_text())
    assert quality["as_of"] == "2025-06-30" and quality["rounds_completed"] >= 1
    assert (folder / "report.md").read_text().startswith("# how are widgets frobnicated")
    assert (folder / "rag_package.jsonl").exists()
    sensitivity = runner.invoke(
        cli, ["--workspace", str(workspace), "research", "sensitivity", run_id, "--all-variants"]
    )
    assert sensitivity.exit_code == 0, sensitivity.output
    assert (
        "ADR-003 two-tier gate" in sensitivity.output
        and "runs whose outcome flips" in sensitivity.output
    )


def test_bad_input_is_one_clear_line(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli, ["--workspace", str(tmp_path), "research", "q", "--as-of", "30/06/2025", "--headless"]
    )
    assert (
        result.exit_code == 2 and "YYYY-MM-DD" in result.output and "Traceback" not in result.output
    )
    essay = "Why? " * 801
    long = runner.invoke(cli, ["--workspace", str(tmp_path), "research", essay, "--headless"])
    assert long.exit_code == 2 and long.output == (
        "error: input 'query' must be at most 4,000 characters long, got 4,005 characters\n"
    )
    assert not list(tmp_path.glob("**/runs/*")), "a refused question starts no run"
    unknown = runner.invoke(
        cli, ["--workspace", str(tmp_path), "research", "sensitivity", "no-such-run"]
    )
    assert unknown.exit_code == 2 and unknown.output.startswith("error: no run no-such-run")
