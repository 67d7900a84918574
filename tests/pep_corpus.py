"""Where the tests find the PEP corpus, and what happens when it is not there (a pytest plugin,
registered by tests/conftest.py).

The corpus lives outside the project, at ``../shared/corpus/peps``. A developer's checkout
without it still runs the suite: the tests that need it are skipped, and the summary says in one
line how many and why. CI must not pass having run none of them, so ``.ci/run`` sets
``WORKBENCH_REQUIRE_CORPUS=1``, and then a missing corpus stops the run before any test with
one line naming the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PEPS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "peps"
"""The PEP corpus: ``shared/corpus/peps`` beside the project's folder."""
REQUIRE_CORPUS = "WORKBENCH_REQUIRE_CORPUS"
"""Set (by .ci/run, to 1; any value but empty or 0), a run without the PEP corpus fails instead
of skipping."""
MISSING = f"the PEP corpus is not at {PEPS}"
"""The one reason every test that needs the corpus is skipped with."""


def _present() -> bool:
    """The folder holds at least one PEP (an empty folder is no corpus)."""
    return PEPS.is_dir() and any(PEPS.glob("*.rst"))


needs_peps = pytest.mark.skipif(not _present(), reason=MISSING)
"""Marks a test that reads the PEP corpus."""


def skip_without_peps() -> None:
    """Skip the calling test or fixture when the PEP corpus is not there."""
    if not _present():
        pytest.skip(MISSING)


def pytest_configure(config: pytest.Config) -> None:
    """With ``WORKBENCH_REQUIRE_CORPUS`` set, no run without the corpus: one line, exit code 4."""
    if os.environ.get(REQUIRE_CORPUS, "") not in ("", "0") and not _present():
        raise pytest.UsageError(
            f"{MISSING}, and {REQUIRE_CORPUS} requires it (the tests that read it would be "
            f"skipped): put the PEPs' .rst files there, or unset {REQUIRE_CORPUS} to skip them"
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line saying how many tests were skipped for want of the corpus, if any were."""
    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and MISSING in str(report.longrepr[2])
    ]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} test(s) skipped: {MISSING} "
            f"(CI sets {REQUIRE_CORPUS}=1, which fails the run instead)",
            yellow=True,
        )
