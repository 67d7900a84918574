"""Step families registered later load when a step of theirs is first asked for."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel

from engine.steps import StepRegistry

pytestmark = pytest.mark.timeout(30)


class Note(BaseModel):
    text: str = ""


async def echo(ctx: object, inp: Note) -> Note:
    return inp


def family(registry: StepRegistry, calls: list[str], name: str) -> Callable[[], None]:
    """A family's load: registers ``name`` and notes that it ran."""

    def load() -> None:
        calls.append(name)
        registry.register(name, echo)

    return load


def test_a_family_loads_on_the_first_question_about_one_of_its_names_and_only_once() -> None:
    registry, calls = StepRegistry(), list[str]()
    registry.register_later(("fam.", "other."), family(registry, calls, "fam.echo"))
    registry.register_later(("second.",), family(registry, calls, "second.echo"))
    assert calls == []
    assert "elsewhere.echo" not in registry
    assert calls == []
    assert "fam.echo" in registry
    assert calls == ["fam.echo"]
    assert registry.get("fam.echo").input_model is Note
    assert "other.missing" not in registry
    assert calls == ["fam.echo"]
    with pytest.raises(KeyError):
        registry.get("second.missing")
    assert calls == ["fam.echo", "second.echo"]


def test_listing_the_names_loads_every_pending_family() -> None:
    registry, calls = StepRegistry(), list[str]()
    registry.register_later(("a.",), family(registry, calls, "a.echo"))
    registry.register_later(("b.",), family(registry, calls, "b.echo"))
    assert registry.names() == ["a.echo", "b.echo"]
    assert sorted(calls) == ["a.echo", "b.echo"]


def test_a_later_registration_for_the_same_prefixes_replaces_the_pending_one() -> None:
    registry, calls = StepRegistry(), list[str]()
    registry.register_later(("ws.",), family(registry, calls, "ws.first"))
    registry.register_later(("ws.",), family(registry, calls, "ws.second"))
    assert registry.names() == ["ws.second"]
    assert calls == ["ws.second"]


def test_a_family_registered_again_reloads_names_it_registered_before() -> None:
    """A second workspace's agents replace the first's, as registering them eagerly did."""
    registry, calls = StepRegistry(), list[str]()
    registry.register_later(("ws.",), family(registry, calls, "ws.echo"))
    assert "ws.echo" in registry
    registry.register_later(("ws.",), family(registry, calls, "ws.echo"))
    assert "ws.echo" in registry
    assert calls == ["ws.echo", "ws.echo"]
