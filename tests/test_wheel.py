"""The wheel ships the product and no dev tool: built for real, offline, from a copy of the tree.

Dev tools — the scripted sample runs and the screenshot maker, the live-model and
peer runs, the mutation driver — live in tests/tools/ and must not reach a
person's install; the chaos demo is a product command (`workbench demo chaos`)
and ships. Nothing shipped may import from tests/, where the dev tools are.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRODUCT = set(
    tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"][
        "root_packages"
    ]
)
"""The project's packages, as the import contracts name them."""
DEV_TOOLS = {"sample_run", "screenshots"} | {
    p.stem for p in (REPO / "tests" / "tools").glob("*.py") if p.stem != "__init__"
}
"""Module names of the dev tools (the first two lived in tui/dev/ before they moved)."""
IMPORTS_TESTS = re.compile(r"^\s*(from|import)\s+tests\b", re.MULTILINE)
NOT_SOURCE = shutil.ignore_patterns(
    ".venv*",
    ".git",
    ".*_cache",
    ".hypothesis",
    "__pycache__",
    "*.egg-info",
    "build",
    "dist",
    "site",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel pip builds from a copy of the source tree (the build writes beside the
    sources), with the installed setuptools and no index: no network."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(REPO, source, ignore=NOT_SOURCE)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            str(work / "out"),
            str(source),
        ],
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (path,) = (work / "out").glob("*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_holds_the_product_packages_and_no_dev_tool(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    top = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top == PRODUCT
    modules = [Path(name) for name in names if name.endswith(".py")]
    shipped_tools = sorted(str(m) for m in modules if m.stem in DEV_TOOLS)
    assert shipped_tools == []
    assert "tui/demo/chaos.py" in names, "the chaos demo is a product command"
    assert "workflows/governed_note.yaml" in names


def test_nothing_shipped_imports_the_tests(wheel: zipfile.ZipFile) -> None:
    importing = [
        name
        for name in wheel.namelist()
        if name.endswith(".py") and IMPORTS_TESTS.search(wheel.read(name).decode("utf-8"))
    ]
    assert importing == []
