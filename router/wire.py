"""What every provider request carries besides the prompt, and how structured output is read back.

A request names its ``task`` in the ``x-workbench-task`` header and carries its
``inputs`` as a fenced JSON block at the end of the last message (DESIGN §7):
real providers ignore the header and read the block as context; the fault
server reads both to answer through its responder.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from router.errors import ErrorClass, ProviderCallError
from router.models import ChatMessage, ChatRequest, ContextLimit

TASK_HEADER = "x-workbench-task"
INPUTS_FENCE = "workbench-inputs"
_INPUTS_BLOCK = re.compile(r"```" + INPUTS_FENCE + r"\n(.*?)\n```", re.DOTALL)
_CODE_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


def encode_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def encode_inputs(req: ChatRequest) -> str:
    """The request's inputs as JSON (``""`` when there are none); encode once and pass it on."""
    return encode_json(req.inputs) if req.inputs else ""


def wire_messages(req: ChatRequest, inputs_json: str | None = None) -> list[ChatMessage]:
    """The request's messages with its inputs appended to the last one (unchanged when there are none).

    ``inputs_json`` is :func:`encode_inputs` of the request when the caller has it already.
    """
    if not req.inputs:
        return list(req.messages)
    last = req.messages[-1]
    encoded = encode_inputs(req) if inputs_json is None else inputs_json
    block = f"\n\n```{INPUTS_FENCE}\n{encoded}\n```"
    return [*req.messages[:-1], ChatMessage(role=last.role, content=last.content + block)]


def extract_inputs(text: str) -> dict[str, Any]:
    """The inputs block of a message, or ``{}`` when there is none or it is not a JSON object."""
    match = _INPUTS_BLOCK.search(text)
    if match is None:
        return {}
    try:
        value = json.loads(match.group(1))
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


@lru_cache(maxsize=256)
def _schema_json(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a response model (cached; a fresh copy each call, callers may edit it)."""
    schema: dict[str, Any] = json.loads(_schema_json(model))
    return schema


def is_strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's ``strict`` structured outputs accept the schema: every object closed, every key required."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties", {})
            if schema.get("additionalProperties") is not False or set(
                schema.get("required", [])
            ) != set(props):
                return False
        return all(is_strict_compatible(v) for v in schema.values())
    if isinstance(schema, list):
        return all(is_strict_compatible(v) for v in schema)
    return True


def schema_name(model: type[BaseModel]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", model.__name__)[:64]
    return name or "response"


def strip_code_fence(content: str) -> str:
    match = _CODE_FENCE.match(content)
    return match.group(1) if match else content


def schema_instruction(model: type[BaseModel]) -> str:
    """The schema as a prompt, for servers that cannot constrain output to a schema themselves."""
    return (
        "Answer with one JSON object and nothing else. It must match this JSON schema:\n"
        + _schema_json(model)
    )


def with_schema_instruction(
    messages: list[ChatMessage], model: type[BaseModel]
) -> list[ChatMessage]:
    """``messages`` with the schema instruction added to the (first) system message."""
    instruction = schema_instruction(model)
    for index, message in enumerate(messages):
        if message.role == "system":
            merged = ChatMessage(role="system", content=f"{message.content}\n\n{instruction}")
            return [*messages[:index], merged, *messages[index + 1 :]]
    return [ChatMessage(role="system", content=instruction), *messages]


def _embedded_objects(text: str) -> list[Any]:
    """Every JSON object that starts at a ``{`` in ``text`` (prose around it ignored), in order."""
    decoder = json.JSONDecoder()
    found: list[Any] = []
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        found.append(value)
        start = text.find("{", end)
    return found


def parse_structured(content: str, schema: type[BaseModel]) -> BaseModel:
    """Validate a model's answer against the request's schema; a mismatch is an INVALID_OUTPUT failure.

    The whole answer (code fence stripped) is tried first; then each JSON object embedded in
    it, since a model asked for JSON in the prompt alone often wraps it in prose.
    """
    try:
        return schema.model_validate_json(strip_code_fence(content).strip())
    except ValidationError as exc:
        first = exc
    for candidate in _embedded_objects(content):
        try:
            return schema.model_validate(candidate)
        except ValidationError:
            continue
    raise ProviderCallError(
        ErrorClass.INVALID_OUTPUT,
        f"answer does not match {schema.__name__}: {first.error_count()} validation error(s)",
    ) from None


def request_chars(req: ChatRequest, inputs_json: str | None = None) -> int:
    """The characters a request puts before the model: its messages and its inputs block."""
    chars = sum(len(m.content) for m in req.messages)
    if req.inputs:
        chars += len(encode_inputs(req) if inputs_json is None else inputs_json)
    return chars


def estimate_tokens(
    req: ChatRequest, default_output_tokens: int, inputs_json: str | None = None
) -> int:
    """A cheap token estimate for the TPM reservation: ~4 characters a token, plus the output budget."""
    return request_chars(req, inputs_json) // 4 + 1 + (req.max_tokens or default_output_tokens)


def prompt_tokens_in_window(limit: ContextLimit, req: ChatRequest, chars: int) -> int:
    """The tokens ``req``'s prompt (``chars`` characters) takes of the limit's window.

    The schema travels with a structured request (as the API's schema or in the prompt), so its
    JSON counts too; tokens are estimated at the limit's characters per token."""
    if req.response_schema is not None:
        chars += len(encode_json(json_schema(req.response_schema)))
    return limit.tokens_of(chars)


def context_window_problem(
    limit: ContextLimit | None, req: ChatRequest, default_output_tokens: int, chars: int
) -> str | None:
    """Why ``req`` (``chars`` characters) would not fit the limit's model, or None."""
    if limit is None:
        return None
    output = req.max_tokens or default_output_tokens
    prompt = prompt_tokens_in_window(limit, req, chars)
    if prompt + output <= limit.tokens:
        return None
    return (
        f"~{prompt} prompt + {output} answer tokens exceed {limit.model}'s context window of"
        f" {limit.tokens}"
    )
