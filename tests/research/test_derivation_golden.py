"""The derivation stamp's hand-bumped versions are kept honest by a golden test (issue 22).

research/corpus_derivation.py stamps each document with the versions of the steps that derived
its stored data; ``reading``, ``passages`` and ``references`` are bumped by hand when a step's
output for the same text changes, and an unchanged document under a stale stamp keeps the old
derivation forever. Here a few fixed hand-written texts go through each step and the output is
hashed; the expected hash is kept beside the version it was recorded under. A step whose output
changes while its version does not fails with one message: which version to bump. Bumping it
fails too, until the new output's hash is recorded under the new version — which is the point:
the change of output and the change of version go together.

Each step reads the fixed texts, not another step's output, so a change to one step names only
that step's version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from research.corpus_derivation import DERIVATION
from research.loaders import load_document, split_passages
from research.references import own_keys, references

PEP = """\
PEP: 9999
Title: Garden Lamp Scheduling
Author: A. Gardener <gardener@example.org>
Status: Final
Type: Standards Track
Created: 02-Mar-2024
Python-Version: 3.14
Replaces: 9990
Requires: 9980
Post-History: 05-Mar-2024, 20-Apr-2024

Abstract
========

This PEP proposes a ``lamps`` module that switches garden lamps at dusk and dawn, as
PEP 9980 switches the sprinklers, and it replaces :pep:`9990`.

Motivation
==========

{motivation}

Rationale
=========

Lamps were switched by hand. A schedule that follows the light saves the walk to the
garden every evening, and it is what every other garden controller does
(see `the sprinkler PEP <pep-9980.html>`_).

Specification
=============

A lamp is scheduled with a call::

    lamps.schedule(lamp, "dusk")

Backwards Compatibility
=======================

None: the module is new.
""".format(
    motivation="\n\n".join(
        " ".join(
            [
                "A garden of twelve lamps on four controllers is switched by twelve walks a day.",
                "Each controller keeps its own times, and none of them knows when the light falls.",
            ]
            * count
        )
        for count in (3, 2, 14)  # two paragraphs near a passage's size, one past the longest
    )
)

MODULE = """\
Lamps: switch garden lamps on and off at the times you choose.

A lamp is switched by the controller it is wired to, and the controller keeps the times each
lamp is to be switched on and off.

schedule
--------

Schedule a lamp to be switched on at a time of day.

Tip: to turn the lamp on at dusk, call

lamps.schedule(lamp, "dusk")

>>> lamps.schedule(porch, "dusk")
<Schedule porch at dusk>

find_controller
---------------

Find a "controller" object for name

This is a backwards compatibility wrapper around
lamps.wiring.lookup that converts most failures to LookupError
and only returns the controller rather than the full wiring

Controller.switch: Switch a lamp on or off now (see RFC 2616 and [the guide](../guide.md)).
"""

GUIDE = """\
---
title: Wiring a garden lamp
status: Draft
date: 2025-06-01
see-also: pep-9999
---

# Wiring a garden lamp

Wire the lamp to the controller before you schedule it; a lamp on no controller is switched by
hand only.

## Steps

1. Turn the power off.
2. Connect the lamp's two wires to a free pair of the controller's terminals.
3. Turn the power on and run `lamps.test(lamp)`.

See [the scheduling PEP](pep-9999.rst) and <https://example.org/lamps>.
"""

PAGE = """\
<html><head><title>Lamp troubleshooting</title></head>
<body><h1>Lamp troubleshooting</h1>
<p>A lamp that does not switch at dusk has a stale schedule: <code>lamps.reset(lamp)</code>
clears it.</p>
<h2>Still dark?</h2>
<p>Check the controller's fuse, then its wiring (<a href="guide.md">the guide</a>).</p>
</body></html>
"""

TEXTS: dict[str, str] = {
    "pep-9999.rst": PEP,
    "stdlib-lamps.txt": MODULE,
    "guide.md": GUIDE,
}
"""The fixed inputs of every step: a PEP, a module's docstrings as the default corpus renders
them, a Markdown guide with front matter."""

FILES: dict[str, str] = {**TEXTS, "troubleshooting.html": PAGE}
"""The reading step's inputs: the texts and an HTML page, whose markup reading removes (the
later steps are given text, never markup)."""

FIELDS: dict[str, dict[str, str]] = {
    "pep-9999.rst": {"PEP": "9999", "Replaces": "9990", "Requires": "9980"},
    "stdlib-lamps.txt": {},
    "guide.md": {"title": "Wiring a garden lamp", "see-also": "pep-9999"},
}
"""The header fields the references step is given with each text (fixed, not read by the
reading step: a change of reading must not look like a change of references)."""


def _reading(name: str, text: str) -> object:
    document = load_document(Path(name), text.encode("utf-8"))
    return {
        "title": document.title,
        "text": document.text,
        "published": document.published and document.published.isoformat(),
        "updated": document.updated and document.updated.isoformat(),
        "status": document.status,
        "kind": document.kind,
        "superseded_by": document.superseded_by,
        "fields": document.fields,
    }


def _passages(name: str, text: str) -> object:
    return split_passages(text)


def _references(name: str, text: str) -> object:
    relative = Path(name).stem
    return {
        "own": sorted(own_keys(relative, FIELDS[name])),
        "refers": sorted(references(relative, text, FIELDS[name])),
    }


STEPS: dict[str, tuple[str, Callable[[str, str], object], dict[str, str]]] = {
    "reading": ("research.loaders.load_document", _reading, FILES),
    "passages": ("research.loaders.split_passages", _passages, TEXTS),
    "references": ("research.references (own_keys, references)", _references, TEXTS),
}
"""Per hand-bumped step: what derives it, how its output is taken, the inputs it is given."""

GOLDEN: dict[str, tuple[str, str]] = {
    "reading": ("1", "32aa7e28a0f487f454907c0ebb6ca6111d5805f9c68bc3702518be35cb5a43cb"),
    "passages": ("2", "435db426dff126cec8202594fe5c395f24dc3b11f8b79ab0f544f6f1b47cd0c9"),
    "references": ("1", "0c2d889993c411a9c12fe43cc88e6298f3d571d484a4c013229a74dd674d8d2a"),
}
"""Per step: (the version in DERIVATION the hash was recorded under, the output's hash)."""


def output_hash(step: str) -> str:
    """The sha256 of ``step``'s output for every fixed text, as sorted JSON."""
    _, derive, inputs = STEPS[step]
    outputs = {name: derive(name, text) for name, text in sorted(inputs.items())}
    return hashlib.sha256(json.dumps(outputs, sort_keys=True).encode("utf-8")).hexdigest()


def golden_mismatch(step: str, version: str, recorded: tuple[str, str], found: str) -> str:
    """What to do when ``step``'s output hash ``found`` under ``version`` is not the one
    ``recorded``; "" when it is."""
    recorded_version, recorded_hash = recorded
    here = f"tests/research/{Path(__file__).name}"
    if version != recorded_version:
        return (
            f"DERIVATION[{step!r}] is {version!r} but the golden was recorded under "
            f"{recorded_version!r}: record GOLDEN[{step!r}] = ({version!r}, {found!r}) in {here}"
        )
    if found != recorded_hash:
        bumped = str(int(version) + 1)
        return (
            f"the output of {STEPS[step][0]} changed but DERIVATION[{step!r}] is still "
            f"{version!r}: bump it to {bumped!r} in research/corpus_derivation.py (stored "
            f"documents are then derived again) and record GOLDEN[{step!r}] = ({bumped!r}, "
            f"{found!r}) in {here}"
        )
    return ""


@pytest.mark.parametrize("step", sorted(STEPS))
def test_a_steps_output_changes_only_with_its_version(step: str) -> None:
    problem = golden_mismatch(step, DERIVATION[step], GOLDEN[step], output_hash(step))
    if problem:
        pytest.fail(problem, pytrace=False)


def test_the_golden_covers_every_hand_bumped_step() -> None:
    """The versions bumped by hand are exactly the steps hashed here; the others (vectors, heads)
    are made of the model names and sizes their modules declare, so they change by themselves."""
    hand_bumped = {step for step, version in DERIVATION.items() if version.isdigit()}
    assert hand_bumped == set(STEPS) == set(GOLDEN)


def test_a_changed_output_names_the_version_to_bump() -> None:
    """The message of each case, for a step whose output changed (or whose version moved)."""
    assert golden_mismatch("passages", "2", ("2", "abc"), "abc") == ""
    unbumped = golden_mismatch("passages", "2", ("2", "abc"), "def")
    assert unbumped.startswith(
        "the output of research.loaders.split_passages changed but DERIVATION['passages'] is "
        "still '2': bump it to '3' in research/corpus_derivation.py"
    )
    assert "record GOLDEN['passages'] = ('3', 'def')" in unbumped
    bumped = golden_mismatch("passages", "3", ("2", "abc"), "def")
    assert bumped.startswith("DERIVATION['passages'] is '3' but the golden was recorded under '2'")
    assert "record GOLDEN['passages'] = ('3', 'def') in tests/research/test_derivation" in bumped
