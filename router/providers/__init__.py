"""Provider adapters (one per API family) and the HTTP provider that sends their calls."""

from router.providers.base import CallSpec, HttpCall, Provider, ProviderAdapter, ProviderReply
from router.providers.http import HttpProvider, make_adapter

__all__ = [
    "CallSpec",
    "HttpCall",
    "HttpProvider",
    "Provider",
    "ProviderAdapter",
    "ProviderReply",
    "make_adapter",
]
