"""Bad input a person types or points the workbench at: one line naming the value and what to
do, a documented exit code, never a traceback or click's four-line usage block."""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path

import pytest

from tests.cli.test_engine_cli import workbench
from workflows import WORKFLOWS_DIR


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["runs", "list", "--limit", "-3"],
            "error: Invalid value for '--limit': -3 is not in the range 1<=x<=10000 — "
            "see `workbench runs list --help`",
        ),
        (["runs", "nosuch"], "error: No such command 'nosuch' — see `workbench runs --help`"),
        (["--nosuch", "runs"], "error: No such option '--nosuch' — see `workbench --help`"),
        (["runs", "show"], "error: Missing argument 'RUN_ID' — see `workbench runs show --help`"),
    ],
)
def test_a_usage_mistake_is_one_line_naming_the_help(
    tmp_path: Path, args: list[str], says: str
) -> None:
    done = workbench(tmp_path, *args)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [says]


def test_a_group_named_alone_still_shows_its_help(tmp_path: Path) -> None:
    done = workbench(tmp_path, "runs")
    assert done.returncode == 2
    assert "Commands:" in done.stderr + done.stdout


def _workflow(tmp_path: Path, step_lines: str) -> Path:
    path = tmp_path / "wf.yaml"
    path.write_text(
        "name: t\ninputs:\n  pat: {type: string, default: a}\nsteps:\n"
        "  - id: a\n    uses: demo.echo\n" + step_lines,
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("step_lines", "where", "says"),
    [
        (
            "    inputs: {topic: \"'\\\\uD800' + inputs.pat\"}\n",
            "7:22",
            "'\\uD800' holds an escape of half a UTF-16 pair",
        ),
        ("    when: \"'\\\\U00110000' == 'x'\"\n", "7:12", "holds an escape that is no character"),
        ("    when: \"b'\\\\u0100' == b''\"\n", "7:12", "holds an escape that is no byte"),
        (
            '    when: "[1].exists(1, true)"\n',
            "7:12",
            "exists() takes a name and an expression (list.exists(x, …)",
        ),
        ('    when: "has(1)"\n', "7:12", "has() takes one field selection"),
        ('    when: "exists(1, 2)"\n', "7:12", "exists() is called on a list"),
    ],
)
def test_a_cel_expression_that_cannot_evaluate_is_refused_by_validate(
    tmp_path: Path, step_lines: str, where: str, says: str
) -> None:
    """These compiled and failed only at run time — a lone surrogate ended the run with exit 70
    and left it RUNNING; a misused macro printed cel-python's parse tree as the reason."""
    path = _workflow(tmp_path, step_lines)
    done = workbench(tmp_path, "validate", str(path))
    assert done.returncode == 1
    [line] = done.stderr.strip().splitlines()
    assert line.startswith(f"{path}:{where}: step 'a' ")
    assert says in line


def test_a_pattern_re2_cannot_read_is_named_and_nothing_else_reaches_stderr(
    tmp_path: Path,
) -> None:
    path = _workflow(tmp_path, '    when: "inputs.pat.matches(inputs.pat)"\n')
    done = workbench(tmp_path, "run", str(path), "--headless", "--input", "pat=(")
    assert done.returncode == 0
    assert done.stderr == ""
    assert "matches(): '(' is not a regular expression (missing ): ()" in done.stdout


def test_a_number_that_is_not_finite_is_refused_where_it_is_written(tmp_path: Path) -> None:
    """JSON has no infinity: such a run was stored with null in its definition and could never
    be read back (`runs show`, `resume`, `runs copy` ended with exit 70)."""
    path = tmp_path / "wf.yaml"
    path.write_text(
        "name: t\nlimits: {timeout_s: 1e400}\ninputs:\n  x: {type: float, default: .nan}\n"
        "steps:\n  - id: a\n    uses: demo.sleep\n    config: {seconds: .inf}\n",
        encoding="utf-8",
    )
    done = workbench(tmp_path, "validate", str(path))
    assert done.returncode == 1
    assert sorted(done.stderr.strip().splitlines()) == [
        f"{path}:2:21: limits.timeout_s: inf is not a finite number, and a run stores none; "
        "write a finite number",
        f"{path}:4:29: inputs.x.default: nan is not a finite number, and a run stores none; "
        "write a finite number",
        f"{path}:8:23: step 'a': config.seconds: inf is not a finite number, and a run stores "
        "none; write a finite number",
    ]


def test_a_stored_run_whose_definition_cannot_be_read_is_one_line_and_left_alone(
    tmp_path: Path,
) -> None:
    """A run stored by a version that let `timeout_s: 1e400` through holds null there."""
    ran = workbench(tmp_path, "run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless")
    assert ran.returncode == 0, ran.stderr
    store = tmp_path / "runs.sqlite"
    with sqlite3.connect(store) as db:
        [(run_id,)] = db.execute("SELECT run_id FROM runs").fetchall()
        db.execute("UPDATE runs SET definition = json_set(definition, '$.limits.timeout_s', null)")
    db.close()
    before = _dump(store)
    for command in (["runs", "show", run_id], ["resume", run_id], ["runs", "export", run_id]):
        done = workbench(tmp_path, *command)
        assert done.returncode == 2, command
        assert done.stderr.strip().splitlines() == [
            f"error: run '{run_id}': its stored workflow definition cannot be read "
            "(limits.timeout_s: Input should be a valid number) — the other runs are "
            "unaffected; leave this one out (workbench runs copy takes the run ids to copy)"
        ], command
    assert _dump(store) == before


def _dump(store: Path) -> list[str]:
    with sqlite3.connect(store) as db:
        dump = list(db.iterdump())
    db.close()
    return dump


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["demo", "chaos", "--time-scale", "nan", "--headless"],
            "error: Invalid value for '--time-scale': 'nan' is not a finite number — "
            "see `workbench demo chaos --help`",
        ),
        (
            ["worker", "--store", "postgresql://127.0.0.1:1/x", "--heartbeat", "nan"],
            "error: Invalid value for '--heartbeat': 'nan' is not a finite number — "
            "see `workbench worker --help`",
        ),
        (
            ["worker", "--store", "postgresql://127.0.0.1:1/x", "--poll", "100"],
            "error: Invalid value for '--poll': 100.0 is not in the range 0<x<=60 — "
            "see `workbench worker --help`",
        ),
    ],
)
def test_a_number_option_that_is_not_finite_or_out_of_range_names_the_option(
    tmp_path: Path, args: list[str], says: str
) -> None:
    """`--time-scale nan` passed click's range (every comparison with NaN is false) and ended
    the demo with exit 70; the worker's `--heartbeat nan` was 'Input should be less than or
    equal to 60', naming no option."""
    done = workbench(tmp_path, *args)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [says]


def test_a_key_written_twice_in_the_config_file_is_refused(tmp_path: Path) -> None:
    """PyYAML kept the last of the two and dropped the first without a word."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "router:\n  providers:\n    - {name: x, kind: ollama_native, model: m, model: n}\n",
        encoding="utf-8",
    )
    done = workbench(tmp_path, "--config", str(config), "providers")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {config}:3:48: duplicate key 'model' (first written at line 3); keep one of them"
    ]


def test_registry_validate_reads_a_file_it_is_given_and_refuses_an_empty_folder(
    tmp_path: Path,
) -> None:
    """Both were `ok: … from 4 file(s)` — the shipped files — whatever the path held."""
    registry_file = tmp_path / "mine.yaml"
    registry_file.write_text("agents:\n  a: {role: x}\n  a: {role: y}\n", encoding="utf-8")
    checked = workbench(tmp_path, "registry", "validate", str(registry_file))
    assert checked.returncode == 1
    assert checked.stderr.splitlines()[0] == (
        f"{registry_file}:3:3: duplicate key 'a' (first written at line 2); keep one of them"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = workbench(tmp_path, "registry", "validate", str(empty))
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"error: {empty}: holds no registry file (YAML under agents/, tools/, models/ or "
        "policies/); name a registry folder or a registry file"
    ]


def test_corpus_search_names_a_collection_that_does_not_exist_and_empty_terms(
    tmp_path: Path,
) -> None:
    """Both printed 'no matches' and exit 0, as if the corpus had been searched."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Queues\n\nA queue holds tasks in order.\n", encoding="utf-8")
    added = workbench(tmp_path, "corpus", "add", str(folder))
    assert added.returncode == 0, added.stderr
    unknown = workbench(tmp_path, "corpus", "search", "queue", "--collection", "noets")
    assert unknown.returncode == 2
    [line] = unknown.stderr.strip().splitlines()
    assert line.startswith("error: --collection 'noets': no such collection in the corpus (it has ")
    assert "notes" in line and line.endswith("; see workbench corpus list")
    empty = workbench(tmp_path, "corpus", "search", " ", "--collection", "notes")
    assert empty.returncode == 2
    assert empty.stderr.strip().splitlines() == [
        "error: corpus search: TERMS is empty; give the words to search for"
    ]
    found = workbench(tmp_path, "corpus", "search", "queue", "--collection", "notes")
    assert found.returncode == 0 and "notes/" in found.stdout


def test_a_write_to_a_damaged_run_store_says_it_is_damaged(tmp_path: Path) -> None:
    """The remedy read 'check that the folder and its files are writable' — they were."""
    ran = workbench(tmp_path, "run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless")
    assert ran.returncode == 0, ran.stderr
    store = tmp_path / "runs.sqlite"
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        [(page_size,)] = db.execute("PRAGMA page_size").fetchall()
        [(root,)] = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'")
        stored = db.execute("SELECT * FROM runs").fetchall()
    db.close()
    damaged = bytearray(store.read_bytes())
    damaged[(root - 1) * page_size : root * page_size] = b"\xab" * page_size
    store.write_bytes(bytes(damaged))
    done = workbench(tmp_path, "run", str(WORKFLOWS_DIR / "fan_out.yaml"), "--headless")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {store}: cannot write the run store (database disk image is malformed) — the "
        f"file is damaged: move {store} aside and a new one is started (the sqlite3 tool's "
        ".recover reads what is left in it)"
    ]
    with sqlite3.connect(store) as db:
        assert (
            db.execute("SELECT * FROM runs WHERE run_id = ?", (stored[0][0],)).fetchall() == stored
        )
    db.close()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_workspace_where_no_file_can_be_made_is_not_called_a_full_disk() -> None:
    """/proc reports no size at all, which read as 'no space left': 'the disk is full: free
    disk space' for a folder that can hold no file."""
    done = workbench(Path("/proc/self"), "runs", "list")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: /proc/self/runs.sqlite: cannot open the run store (unable to open database "
        "file) — check that the file and its folder are readable and writable; nothing in it "
        "was changed"
    ]


def test_a_workflow_path_that_is_not_a_regular_file_says_so(tmp_path: Path) -> None:
    """A pipe or a device was 'no such workflow file' though it exists."""
    pipe = tmp_path / "wf.yaml"
    os.mkfifo(pipe)
    done = workbench(tmp_path, "validate", str(pipe))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {pipe}: is not a regular file (a folder, device, pipe or socket); name a "
        "workflow YAML file"
    ]


def test_serve_refuses_an_address_it_cannot_use_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each ended with exit 70: gaierror for the host, AssertionError for the port and the
    public URL; a port in use was an unexplained OSError."""
    monkeypatch.setenv("WORKBENCH_TOKEN", "a-token-of-sixteen-or-more")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        cases = {
            # an empty label: refused by the IDNA encoding before any name is looked up (no
            # network in tests)
            ("--host", "a..b", "--port", port): "error: --host 'a..b' names no address (",
            ("--port", "99999"): "error: Invalid value for '--port': 99999 is not in the range "
            "1<=x<=65535 — see `workbench serve --help`",
            ("--public-url", "notaurl", "--port", port): "error: --public-url 'notaurl' is not "
            "an http(s) address; give the one browsers use, e.g. https://workbench.example.org",
            ("--port", port): f"error: cannot listen on 127.0.0.1:{port} (",
        }
        for args, says in cases.items():
            done = workbench(tmp_path, "serve", *args)
            assert done.returncode == 2, args
            [line] = done.stderr.strip().splitlines()
            assert line.startswith(says), args
