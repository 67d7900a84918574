"""tests/pep_corpus.py: without the PEP corpus a developer's run skips what needs it and says so
in one line; a run with WORKBENCH_REQUIRE_CORPUS=1 (CI) fails with one line instead.

Each case runs a real pytest process on a small project laid out as this one is (the plugin
copied into ``proj/tests``, the corpus expected at ``shared/corpus/peps`` beside ``proj``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pep_corpus import REQUIRE_CORPUS

pytestmark = pytest.mark.timeout(120)

TESTS = """
from tests.pep_corpus import PEPS, needs_peps, skip_without_peps


@needs_peps
def test_marked():
    assert PEPS.is_dir()


def test_skipping():
    skip_without_peps()
    assert PEPS.is_dir()


def test_without_the_corpus():
    assert True
"""


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    tests = project / "tests"
    tests.mkdir(parents=True)
    (tests / "__init__.py").write_text("")
    shutil.copy(Path(__file__).with_name("pep_corpus.py"), tests / "pep_corpus.py")
    (tests / "conftest.py").write_text('pytest_plugins = ["tests.pep_corpus"]\n')
    (tests / "test_needs.py").write_text(TESTS)
    return project


def _pytest(project: Path, require: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != REQUIRE_CORPUS}
    if require is not None:
        env[REQUIRE_CORPUS] = require
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )


def test_without_the_corpus_a_plain_run_skips_and_says_how_many_and_why(tmp_path: Path) -> None:
    ran = _pytest(_project(tmp_path), require=None)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed, 2 skipped" in ran.stdout
    missing = tmp_path / "shared" / "corpus" / "peps"
    assert f"2 test(s) skipped: the PEP corpus is not at {missing}" in ran.stdout


@pytest.mark.parametrize("require", ["1", "true"])
@pytest.mark.parametrize("folder", [False, True], ids=["no folder", "an empty folder"])
def test_without_the_corpus_a_run_that_requires_it_fails_with_one_line(
    tmp_path: Path, require: str, folder: bool
) -> None:
    project = _project(tmp_path)
    if folder:
        (tmp_path / "shared" / "corpus" / "peps").mkdir(parents=True)
    ran = _pytest(project, require=require)
    assert ran.returncode == pytest.ExitCode.USAGE_ERROR
    (line,) = [line for line in ran.stderr.splitlines() if line.strip()]
    missing = tmp_path / "shared" / "corpus" / "peps"
    assert line.startswith(
        f"ERROR: the PEP corpus is not at {missing}, and {REQUIRE_CORPUS} requires"
    )
    assert "passed" not in ran.stdout


def test_with_the_corpus_a_run_that_requires_it_runs_every_test(tmp_path: Path) -> None:
    project = _project(tmp_path)
    peps = tmp_path / "shared" / "corpus" / "peps"
    peps.mkdir(parents=True)
    (peps / "pep-0001.rst").write_text("PEP: 1\nTitle: A PEP\n")
    ran = _pytest(project, require="1")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "3 passed" in ran.stdout and "skipped" not in ran.stdout
