"""How every caller acts on an answer cut at its output limit: it asks once more, with more room.

The router flags such an answer (``ChatResponse.truncated``) instead of failing it over, since
the provider did nothing wrong: the caller gave it too little room. Research's model stages,
the tie-breaker and agents all act on the flag through :func:`ask_with_room`: the request is
asked again once with :data:`TRUNCATED_GROWTH` times the room — no more than the models'
context window leaves beside the prompt — and whatever comes back, cut again or not, goes
through the caller's usual checks (repair, the built-in model's answer, the default edge), so a
second cut answer degrades exactly as any invalid answer does. Once, never in a loop: a model
that rambles to any limit must not multiply a run's cost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from router.models import ChatRequest, ChatResponse, ContextLimit
from router.wire import prompt_tokens_in_window, request_chars

TRUNCATED_GROWTH = 2
"""An answer cut at its output limit is asked again once with this many times the room."""

Answer = TypeVar("Answer")


def more_room(
    request: ChatRequest,
    response: ChatResponse,
    window: ContextLimit | None,
    default_output_tokens: int,
) -> ChatRequest | None:
    """``request`` with more room for the answer when ``response`` was cut at its output limit;
    None when it was not, or when the context window leaves no more room than it had.

    The room the cut answer had is the request's ``max_tokens`` — or, when it names none (the
    server's own limit applied), ``default_output_tokens`` — or the output tokens the answer
    reports, whichever is larger. ``window`` is the tightest context window of the models the
    request may reach (None: unknown)."""
    if not response.truncated:
        return None
    asked = max(request.max_tokens or default_output_tokens, response.usage.output_tokens)
    room = asked * TRUNCATED_GROWTH
    if window is not None:
        prompt = prompt_tokens_in_window(window, request, request_chars(request))
        room = min(room, window.tokens - prompt)
    if room <= asked:
        return None
    return request.model_copy(update={"max_tokens": room})


async def ask_with_room(
    ask: Callable[[ChatRequest], Awaitable[Answer]],
    request: ChatRequest,
    again: Callable[[ChatRequest, Answer], ChatRequest | None],
    keep_cut_on: tuple[type[Exception], ...] = (),
) -> Answer:
    """``ask(request)``; when ``again`` (usually :func:`more_room` with the caller's window)
    gives a request with more room, its answer instead. If asking again fails with one of
    ``keep_cut_on``, the cut answer is kept for the caller's checks to judge."""
    answer = await ask(request)
    roomier = again(request, answer)
    if roomier is None:
        return answer
    try:
        return await ask(roomier)
    except keep_cut_on:
        return answer
