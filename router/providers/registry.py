"""The one table from provider kind to adapter, found rather than written.

Every module of :mod:`router.providers.adapters` is imported, and every adapter class defined
there that names a ``kind`` is listed, in ``listed_at`` order. A kind is therefore added by
adding its adapter module (and its fault-server codec, which the adapter names); no list of
kinds is kept anywhere else — the config's kinds, defaults and environment providers, the
error hooks and the fault server's codecs are all read from here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from router.providers import adapters as _family_modules
from router.providers.base import ProviderAdapter


def _adapter_classes() -> Iterator[type[ProviderAdapter]]:
    """Every subclass of :class:`ProviderAdapter`, at any depth."""
    pending = list(ProviderAdapter.__subclasses__())
    while pending:
        cls = pending.pop(0)
        yield cls
        pending.extend(cls.__subclasses__())


def _discover() -> dict[str, ProviderAdapter]:
    package = _family_modules.__name__
    for module in pkgutil.iter_modules(_family_modules.__path__):
        importlib.import_module(f"{package}.{module.name}")
    found: dict[str, ProviderAdapter] = {}
    classes = [
        cls
        for cls in _adapter_classes()
        if "kind" in vars(cls) and cls.__module__.startswith(f"{package}.")
    ]
    for cls in sorted(classes, key=lambda c: c.listed_at):
        if cls.kind in found:
            raise RuntimeError(
                f"provider kind {cls.kind!r} has two adapters: "
                f"{type(found[cls.kind]).__qualname__} and {cls.__qualname__}"
            )
        found[cls.kind] = cls()
    return found


ADAPTERS: Mapping[str, ProviderAdapter] = MappingProxyType(_discover())
"""Kind -> its adapter (adapters hold no state: one instance serves every provider)."""
KINDS: tuple[str, ...] = tuple(ADAPTERS)


def make_adapter(kind: str) -> ProviderAdapter:
    """The adapter of ``kind``."""
    adapter = ADAPTERS.get(kind)
    if adapter is None:
        raise ValueError(f"unknown provider kind {kind!r}")
    return adapter


def kinds_phrase() -> str:
    """The kinds as a person reads them: ``'openai', 'anthropic', … or 'ollama_native'``."""
    quoted = [repr(kind) for kind in KINDS]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
