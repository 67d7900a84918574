"""The run's services by type (engine/services.py): what a step asks for is what was provided."""

from __future__ import annotations

from dataclasses import dataclass

from engine.services import ServiceRegistry


@dataclass(frozen=True)
class Folder:
    path: str


@dataclass(frozen=True)
class Port:
    name: str


@dataclass(frozen=True)
class NamedFolder(Folder):
    name: str = ""


def test_a_service_is_found_by_its_own_type_and_a_missing_one_is_none() -> None:
    services = ServiceRegistry(Folder("/runs"), Port("router"))
    assert services.get(Folder) == Folder("/runs")
    assert services.get(Port) == Port("router")
    assert ServiceRegistry().get(Folder) is None
    assert ServiceRegistry(NamedFolder("/runs", "a")).get(Folder) is None  # exact type only


def test_providing_a_type_again_replaces_it() -> None:
    services = ServiceRegistry(Port("default"))
    services.provide(Port("router"))
    assert services.get(Port) == Port("router")


def test_setdefault_builds_once_and_keeps_what_was_provided() -> None:
    made: list[Port] = []

    def make() -> Port:
        made.append(Port("built"))
        return made[-1]

    services = ServiceRegistry()
    first = services.setdefault(Port, make)
    assert services.setdefault(Port, make) is first
    assert made == [first]
    provided = ServiceRegistry(Port("router"))
    assert provided.setdefault(Port, make) == Port("router")
    assert len(made) == 1
