"""Every response and stream parser, on payloads built with the official SDKs' response types
(openai, anthropic, google-genai) or copied from the provider's documentation (Ollama) — never
on payloads written by the code under test. And the fault server's answers, streamed or not,
must be valid SDK response objects: the tests that use it then test the real formats.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic.types as claude
import pytest
from anthropic.types.raw_message_delta_event import Delta
from google.genai import types as genai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.chat import chat_completion as completion
from openai.types.chat import chat_completion_chunk as chunk
from pydantic import TypeAdapter

from router.errors import ErrorClass, ProviderCallError
from router.fault.protocols import stream_frames, success_body
from router.providers.base import ParsedChat, ProviderAdapter, StreamEndedEarly
from router.providers.registry import make_adapter

pytestmark = pytest.mark.timeout(60)


def feed_all(adapter: ProviderAdapter, events: list[tuple[str, str]]) -> tuple[str, ParsedChat]:
    decoder = adapter.stream_decoder()
    streamed = "".join(decoder.feed(event, data) for event, data in events)
    return streamed, decoder.result()


# --- OpenAI-compatible -------------------------------------------------------------------------------


def openai_completion(finish: str) -> dict[str, Any]:
    return ChatCompletion(
        id="chatcmpl-1",
        object="chat.completion",
        created=1,
        model="gpt-4.1-mini",
        choices=[
            completion.Choice(
                index=0,
                finish_reason=finish,  # type: ignore[arg-type]
                message=ChatCompletionMessage(role="assistant", content='{"a": 1}'),
            )
        ],
        usage=CompletionUsage(prompt_tokens=11, completion_tokens=7, total_tokens=18),
    ).model_dump(mode="json")


@pytest.mark.parametrize(("finish", "truncated"), [("stop", False), ("length", True)])
def test_openai_completion_parsed_and_truncation_flagged(finish: str, truncated: bool) -> None:
    parsed = make_adapter("openai").parse_chat(openai_completion(finish))
    assert parsed.content == '{"a": 1}' and parsed.truncated is truncated
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (11, 7)


def openai_chunks(pieces: list[str], finish: str | None, usage: bool) -> list[tuple[str, str]]:
    def make(choices: list[chunk.Choice], **extra: Any) -> tuple[str, str]:
        obj = ChatCompletionChunk(
            id="c1",
            object="chat.completion.chunk",
            created=1,
            model="gpt-4.1-mini",
            choices=choices,
            **extra,
        )
        return "", obj.model_dump_json(exclude_none=True)

    events = [make([chunk.Choice(index=0, delta=chunk.ChoiceDelta(role="assistant"))])]
    events += [
        make([chunk.Choice(index=0, delta=chunk.ChoiceDelta(content=piece))]) for piece in pieces
    ]
    if finish is not None:
        events.append(
            make([chunk.Choice(index=0, delta=chunk.ChoiceDelta(), finish_reason=finish)])  # type: ignore[arg-type]
        )
    if usage:
        events.append(
            make([], usage=CompletionUsage(prompt_tokens=5, completion_tokens=3, total_tokens=8))
        )
        events.append(("", "[DONE]"))
    return events


@pytest.mark.parametrize(("finish", "truncated"), [("stop", False), ("length", True)])
def test_openai_stream_text_usage_and_truncation(finish: str, truncated: bool) -> None:
    streamed, parsed = feed_all(
        make_adapter("openai"), openai_chunks(["Hel", "lo", " world"], finish, usage=True)
    )
    assert streamed == parsed.content == "Hello world"
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (5, 3)
    assert parsed.truncated is truncated


def test_an_openai_stream_cut_before_its_end_is_not_an_answer() -> None:
    with pytest.raises(StreamEndedEarly):
        feed_all(make_adapter("openai"), openai_chunks(["Hel", "lo"], None, usage=False))


# --- Anthropic --------------------------------------------------------------------------------------------


def claude_message(block: Any, stop: str) -> dict[str, Any]:
    return claude.Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[block],
        stop_reason=stop,  # type: ignore[arg-type]
        stop_sequence=None,
        usage=claude.Usage(input_tokens=20, output_tokens=9),
    ).model_dump(mode="json")


def test_anthropic_message_text_tool_and_truncation() -> None:
    adapter = make_adapter("anthropic")
    text = adapter.parse_chat(
        claude_message(claude.TextBlock(type="text", text="hi"), "max_tokens")
    )
    assert text.content == "hi" and text.truncated
    assert (text.usage.input_tokens, text.usage.output_tokens) == (20, 9)
    tool = claude.ToolUseBlock(type="tool_use", id="t1", name="Verdict", input={"v": "yes"})
    structured = adapter.parse_chat(claude_message(tool, "tool_use"))
    assert json.loads(structured.content) == {"v": "yes"} and not structured.truncated


def claude_stream(block: Any, deltas: list[Any], stop: str) -> list[tuple[str, str]]:
    start = claude.Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[],
        stop_reason=None,
        stop_sequence=None,
        usage=claude.Usage(input_tokens=25, output_tokens=1),
    )
    events: list[Any] = [
        claude.RawMessageStartEvent(type="message_start", message=start),
        claude.RawContentBlockStartEvent(type="content_block_start", index=0, content_block=block),
        *[
            claude.RawContentBlockDeltaEvent(type="content_block_delta", index=0, delta=d)
            for d in deltas
        ],
        claude.RawContentBlockStopEvent(type="content_block_stop", index=0),
        claude.RawMessageDeltaEvent(
            type="message_delta",
            delta=Delta(stop_reason=stop, stop_sequence=None),  # type: ignore[arg-type]
            usage=claude.MessageDeltaUsage(output_tokens=15),
        ),
        claude.RawMessageStopEvent(type="message_stop"),
    ]
    return [(e.type, e.model_dump_json(exclude_none=True)) for e in events]


def test_anthropic_stream_of_text() -> None:
    deltas = [claude.TextDelta(type="text_delta", text=t) for t in ("Hel", "lo")]
    streamed, parsed = feed_all(
        make_adapter("anthropic"),
        claude_stream(claude.TextBlock(type="text", text=""), deltas, "max_tokens"),
    )
    assert streamed == parsed.content == "Hello" and parsed.truncated
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (25, 15)


def test_anthropic_stream_of_a_tool_call_is_its_json() -> None:
    deltas = [
        claude.InputJSONDelta(type="input_json_delta", partial_json=p) for p in ('{"v": ', '"yes"}')
    ]
    block = claude.ToolUseBlock(type="tool_use", id="t1", name="Verdict", input={})
    _, parsed = feed_all(make_adapter("anthropic"), claude_stream(block, deltas, "tool_use"))
    assert json.loads(parsed.content) == {"v": "yes"} and not parsed.truncated


def test_anthropic_error_event_mid_stream_is_an_overload() -> None:
    # copied from Anthropic's streaming documentation ("Error events")
    error = '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    decoder = make_adapter("anthropic").stream_decoder()
    with pytest.raises(ProviderCallError) as caught:
        decoder.feed("error", error)
    assert caught.value.error_class is ErrorClass.OVERLOAD


# --- Gemini -------------------------------------------------------------------------------------------------


def gemini_response(text: str, finish: str | None, out_tokens: int) -> str:
    candidate = genai.Candidate(
        content=genai.Content(role="model", parts=[genai.Part(text=text)]),
        finish_reason=genai.FinishReason(finish) if finish else None,
        index=0,
    )
    response = genai.GenerateContentResponse(
        candidates=[candidate],
        usage_metadata=genai.GenerateContentResponseUsageMetadata(
            prompt_token_count=30, candidates_token_count=out_tokens, total_token_count=30
        ),
    )
    return response.model_dump_json(by_alias=True, exclude_none=True)


@pytest.mark.parametrize(("finish", "truncated"), [("STOP", False), ("MAX_TOKENS", True)])
def test_gemini_response_and_truncation(finish: str, truncated: bool) -> None:
    parsed = make_adapter("gemini").parse_chat(json.loads(gemini_response("ok", finish, 4)))
    assert parsed.content == "ok" and parsed.truncated is truncated
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (30, 4)


def test_gemini_stream() -> None:
    events = [
        ("", gemini_response("Hel", None, 1)),
        ("", gemini_response("lo", "MAX_TOKENS", 2)),
    ]
    streamed, parsed = feed_all(make_adapter("gemini"), events)
    assert streamed == parsed.content == "Hello" and parsed.truncated
    assert parsed.usage.output_tokens == 2


def test_a_gemini_stream_without_a_finish_reason_was_cut() -> None:
    with pytest.raises(StreamEndedEarly):
        feed_all(make_adapter("gemini"), [("", gemini_response("Hel", None, 1))])


# --- Ollama (no official SDK in scope: lines copied from its API documentation) -----------------------

OLLAMA_DOC_STREAM = [
    '{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00",'
    '"message":{"role":"assistant","content":"The","images":null},"done":false}',
    '{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z",'
    '"message":{"role":"assistant","content":""},"done":true,"total_duration":4883583458,'
    '"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,'
    '"eval_count":282,"eval_duration":4535599000}',
]


def test_ollama_stream_from_the_documentation() -> None:
    streamed, parsed = feed_all(make_adapter("ollama_native"), [("", s) for s in OLLAMA_DOC_STREAM])
    assert streamed == parsed.content == "The"
    assert (parsed.usage.input_tokens, parsed.usage.output_tokens) == (26, 282)


def test_an_ollama_stream_without_its_done_line_was_cut() -> None:
    with pytest.raises(StreamEndedEarly):
        feed_all(make_adapter("ollama_native"), [("", OLLAMA_DOC_STREAM[0])])


# --- the fault server speaks the real formats ---------------------------------------------------------------


def frames_data(frames: list[bytes]) -> list[tuple[str, str]]:
    out = []
    for frame in frames:
        lines = frame.decode().strip().splitlines()
        event = next((ln[7:] for ln in lines if ln.startswith("event: ")), "")
        data = next(ln[6:] for ln in lines if ln.startswith("data: "))
        out.append((event, data))
    return out


ANSWER = {"verdict": "yes", "score": 0.5}


def test_fault_server_openai_answers_are_sdk_objects() -> None:
    body = {"stream": True, "stream_options": {"include_usage": True}}
    ChatCompletion.model_validate(success_body("openai", "m", ANSWER, {}, 10, 1))
    data = frames_data(stream_frames("openai", "m", ANSWER, body, 10, 1))
    assert data[-1] == ("", "[DONE]")
    for _, payload in data[:-1]:
        ChatCompletionChunk.model_validate_json(payload)


def test_fault_server_anthropic_answers_are_sdk_objects() -> None:
    body = {"tool_choice": {"type": "tool", "name": "Verdict"}}
    claude.Message.model_validate(success_body("anthropic", "m", ANSWER, body, 10, 1))
    events = TypeAdapter(claude.RawMessageStreamEvent)
    for name, payload in frames_data(stream_frames("anthropic", "m", ANSWER, body, 10, 1)):
        if name != "ping":
            assert events.validate_json(payload).type == name


def test_fault_server_gemini_answers_are_sdk_objects() -> None:
    genai.GenerateContentResponse.model_validate(success_body("gemini", "m", ANSWER, {}, 10, 1))
    for _, payload in frames_data(stream_frames("gemini", "m", ANSWER, {}, 10, 1)):
        genai.GenerateContentResponse.model_validate_json(payload)
