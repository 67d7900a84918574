"""The registry finds every adapter: a kind is its adapter module and its codec, nothing else.

docs/providers.md ("Adding an API family") names the two files; the second test writes a toy
family as exactly those two files and checks that the registry lists it with its facts and
that the fault server's codec table takes its codec.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

import router.fault.codecs
import router.providers.adapters
from router.config import ProviderConfig, router_config_from_env
from router.fault import protocols
from router.providers import registry
from router.providers.base import ProviderAdapter

ADAPTER_MODULE = """
from typing import Any
from router.fault.codecs.toy import ToyCodec
from router.providers.base import HttpCall, ParsedChat, ProviderAdapter, usage_of
from router.ratelimit_headers import RateLimitInfo, parse_generic


class ToyAdapter(ProviderAdapter):
    kind = "toy"
    listed_at = 99
    codec = ToyCodec
    default_base_url = "http://127.0.0.1:9/toy"
    key_env = "TOY_API_KEY"
    env_models = {1: "toy-small"}

    def chat_call(self, cfg, spec, api_key, *, stream=False):
        return HttpCall("POST", f"{cfg.resolved_base_url}/talk", {}, {"say": spec.model})

    def parse_chat(self, body: Any) -> ParsedChat:
        return ParsedChat(body["said"], usage_of(0, 0))

    def stream_decoder(self):
        raise NotImplementedError

    def health_call(self, cfg, api_key):
        return None

    def rate_limits(self, headers, body, now_wall) -> RateLimitInfo:
        return parse_generic(headers, now_wall)
"""
CODEC_MODULE = """
from router.fault.codec import FaultCodec, Route


class ToyCodec(FaultCodec):
    protocol = "toy"
    known_fields = frozenset({"say"})

    def route(self, method, api_path, fields, headers):
        if method == "POST" and api_path.endswith("/talk"):
            return Route("chat", self.protocol, fields.get("say"))
        return None
"""


def test_every_kind_has_its_adapter_and_a_codec_the_fault_server_speaks() -> None:
    assert registry.KINDS[0] == "openai"  # the config error lists it first
    assert set(registry.KINDS) == {
        "openai",
        "anthropic",
        "gemini",
        "azure",
        "github",
        "ollama",
        "ollama_native",
    }
    for kind, adapter in registry.ADAPTERS.items():
        assert adapter.kind == kind
        assert type(protocols.CODECS[adapter.codec.protocol]) is adapter.codec
        if adapter.default_base_url is None:  # the provider must name its own
            with pytest.raises(ValidationError, match=f"an {kind} provider needs base_url"):
                ProviderConfig.model_validate({"name": "p", "kind": kind, "model": "m"})


@pytest.fixture
def toy_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A family written as two files, in folders the two packages also search."""
    adapters, codecs = tmp_path / "adapters", tmp_path / "codecs"
    adapters.mkdir()
    codecs.mkdir()
    (adapters / "toy.py").write_text(ADAPTER_MODULE)
    (codecs / "toy.py").write_text(CODEC_MODULE)
    monkeypatch.setattr(
        router.providers.adapters, "__path__", [*router.providers.adapters.__path__, str(adapters)]
    )
    monkeypatch.setattr(
        router.fault.codecs, "__path__", [*router.fault.codecs.__path__, str(codecs)]
    )
    yield
    for name in ("router.providers.adapters.toy", "router.fault.codecs.toy"):
        sys.modules.pop(name, None)


def test_a_new_family_is_its_adapter_and_its_codec(toy_family: None) -> None:
    found = registry._discover()
    assert list(found)[-1] == "toy"
    toy = found["toy"]
    assert isinstance(toy, ProviderAdapter) and toy.key_env == "TOY_API_KEY"
    codec = toy.codec()
    assert codec.protocol == "toy" and codec.route("POST", "/toy/talk", {"say": "m"}, {})
    assert toy.from_environment({"TOY_API_KEY": "k"}) == {
        "name": "toy",
        "kind": "toy",
        "api_key_env": "TOY_API_KEY",
        "models": {1: "toy-small"},
        "bulkhead": 10,
    }
    # the process's own table was found once, at import: the toy family is not in it
    assert "toy" not in registry.ADAPTERS
    assert router_config_from_env({"TOY_API_KEY": "k"}).providers == []
    assert importlib.import_module("router.fault.codecs.toy").ToyCodec is toy.codec
