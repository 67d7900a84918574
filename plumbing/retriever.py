"""What a step searches: anything that answers a query with passages (the corpus now, web
search later). The engine carries one in a run's context; research implements it."""

from __future__ import annotations

from typing import Any, Protocol


class Retriever(Protocol):
    async def search(self, query: str, **options: Any) -> list[dict[str, Any]]: ...
