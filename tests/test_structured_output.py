"""Typed results on every wire protocol, streamed and not, over recorded answers
replayed on a real socket (``tests/recordings/structured``, written from each
provider's documented shapes by its ``build.py``; sources in SOURCES.md).

What is proven: the typed value (``message.output``, ``RUN_COMPLETED.output``); the
native mode each protocol's request carries (checked against the pinned official
SDK's types); a retry on an answer that ended normally and failed validation, with
the errors sent back; ``OutputValidationError`` when the retries run out; and **no
retry** (one request, the stop reported, nothing validated) on MAX_OUTPUT, REFUSAL,
CONTEXT_FULL and INTERRUPTED: the stop decides before validation does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from sdk_shapes import CHECKS
from zett_agent import (
    AgentEventType,
    AgentRunConfig,
    AssistantMessage,
    ContextOverflowError,
    Model,
    OutputValidationError,
    StopReason,
    UserMessage,
    create_agent,
)
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import HTTPRefusal, Vendor, get_vendor

HERE = Path(__file__).parent / "recordings" / "structured"


class City(BaseModel):
    """A city and how many people live in it."""

    name: str
    population: int


PARIS = City(name="Paris", population=2102650)
CUT = '{"name": "Par'


@dataclass(frozen=True)
class Wire:
    protocol: str
    prefix: str  # of the recordings' file names
    vendor: str
    stream_ext: str = ".sse"


WIRES = {
    w.protocol: w
    for w in (
        Wire("anthropic", "anthropic", "anthropic"),
        Wire("openai-chat", "openai_chat", "openai"),
        Wire("openai-responses", "openai_responses", "openai-responses"),
        Wire("gemini", "gemini", "google"),
        Wire("ollama", "ollama", "ollama", ".ndjson"),
    )
}

NATIVE_FIELD = {  # where each protocol's native mode puts the schema
    "anthropic": ("output_config", "format", "schema"),
    "openai-chat": ("response_format", "json_schema", "schema"),
    "openai-responses": ("text", "format", "schema"),
    "gemini": ("generationConfig", "responseJsonSchema"),
    "ollama": ("format",),
}


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture(params=[True, False], ids=["streamed", "whole"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def recorded(wire: Wire, case: str, streamed: bool, status: int = 200) -> Reply:
    ext = wire.stream_ext if streamed else ".json"
    path = HERE / f"{wire.prefix}__structured_{case}{ext}"
    return Reply.file(path, status=status)


@dataclass
class Outcome:
    message: AssistantMessage | None
    error: BaseException | None
    events: list[Any]
    requests: list[dict[str, Any]]
    history: list[Any]
    unused: int

    def kinds(self) -> list[AgentEventType]:
        return [e.type for e in self.events]


async def run(
    wire: Wire,
    replies: list[Reply],
    streamed: bool,
    *,
    vendor: Vendor | str | None = None,
    config: AgentRunConfig | None = None,
    cancel_after: float | None = None,
) -> Outcome:
    events: list[Any] = []
    error: BaseException | None = None
    with ReplayServer(replies) as server:
        model = Model(vendor or wire.vendor, "m", base_url=server.url, api_key="k", stream=streamed)
        agent = await create_agent(model, config, output_type=City)
        try:
            with anyio.move_on_after(cancel_after if cancel_after is not None else 60):
                async for event in agent.stream("Which city is the capital of France?"):
                    events.append(event)
        except Exception as caught:
            error = caught
        finally:
            await agent.aclose()
    completed = [e for e in events if e.type is AgentEventType.RUN_COMPLETED]
    return Outcome(
        completed[0].message if completed else None,
        error,
        events,
        [r.json for r in server.requests],
        list(agent.messages),
        server.remaining,
    )


def dig(body: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = body
    for part in path:
        node = node[part]
    return node


# ---------------------------------------------------------------- the typed value


async def test_the_typed_value_in_the_native_mode_of_each_protocol(
    wire: Wire, streamed: bool
) -> None:
    out = await run(wire, [recorded(wire, "ok", streamed)], streamed)
    assert out.error is None
    assert out.message is not None and out.message.output == PARIS
    assert isinstance(out.message.output, City)
    completed = out.events[-1]
    assert completed.type is AgentEventType.RUN_COMPLETED and completed.output == PARIS
    body = out.requests[0]
    schema = dig(body, NATIVE_FIELD[wire.protocol])
    assert set(schema["properties"]) == {"name", "population"}
    assert "tools" not in body and "tool_choice" not in body  # native, not a tool
    if wire.protocol == "openai-chat":
        assert body["response_format"]["json_schema"]["strict"] is True
        assert schema["additionalProperties"] is False
    if wire.protocol == "openai-responses":
        assert body["text"]["format"] == {
            "type": "json_schema",
            "name": "City",
            "description": City.__doc__,
            "schema": schema,
            "strict": True,
        }
    if wire.protocol == "gemini":
        assert body["generationConfig"]["responseMimeType"] == "application/json"
    CHECKS[wire.protocol](body)


async def test_streamed_partial_outputs_grow_into_the_typed_value(wire: Wire) -> None:
    out = await run(wire, [recorded(wire, "ok", True)], True)
    partials = [e.output for e in out.events if e.type is AgentEventType.PARTIAL_OUTPUT]
    assert partials, "no partial output was streamed"
    assert all(isinstance(p, City) for p in partials)
    assert partials[-1] == PARIS
    # validated leniently as the text grew: the population's digits arrive in pieces
    assert len({p.population for p in partials}) == len(partials)
    first_partial = out.kinds().index(AgentEventType.PARTIAL_OUTPUT)
    assert first_partial < out.kinds().index(AgentEventType.MODEL_COMPLETED)


# ---------------------------------------------------------------- a retry


async def test_an_invalid_answer_is_retried_with_its_errors(wire: Wire, streamed: bool) -> None:
    replies = [recorded(wire, "invalid", streamed), recorded(wire, "ok", streamed)]
    out = await run(wire, replies, streamed)
    assert out.error is None and out.message is not None
    assert out.message.output == PARIS
    assert len(out.requests) == 2
    invalid = [e for e in out.events if e.type is AgentEventType.OUTPUT_INVALID]
    assert len(invalid) == 1 and "population" in (invalid[0].text or "")
    # the failed attempt and the errors sent back stay in the history
    kinds = [type(m).__name__ for m in out.history]
    assert kinds == ["UserMessage", "AssistantMessage", "UserMessage", "AssistantMessage"]
    feedback = out.history[2]
    assert isinstance(feedback, UserMessage) and "population: Field required" in feedback.content
    assert out.history[1].output is None and out.history[3].output == PARIS
    sent = str(out.requests[1])
    assert "population: Field required" in sent  # the retry carried the errors
    CHECKS[wire.protocol](out.requests[1])


async def test_retries_run_out_into_output_validation_error(wire: Wire, streamed: bool) -> None:
    replies = [recorded(wire, "invalid", streamed), recorded(wire, "invalid", streamed)]
    out = await run(wire, replies, streamed, config=AgentRunConfig(output_retries=1))
    assert isinstance(out.error, OutputValidationError)
    assert [a.text for a in out.error.attempts] == ['{"name": "Paris"}'] * 2
    assert all("population" in a.errors for a in out.error.attempts)
    assert out.kinds()[-1] is AgentEventType.RUN_FAILED
    assert len(out.requests) == 2
    assert out.message is None  # no RUN_COMPLETED: the run failed


# ---------------------------------------------------------------- the stop decides first


def assert_no_retry(out: Outcome, reason: StopReason) -> AssistantMessage:
    assert out.error is None, out.error
    assert out.message is not None
    assert out.message.stop is not None and out.message.stop.reason is reason
    assert out.message.output is None
    assert AgentEventType.OUTPUT_INVALID not in out.kinds()
    assert len(out.requests) == 1 and out.unused == 1, "the stop was retried"
    return out.message


async def test_no_retry_at_max_output(wire: Wire, streamed: bool) -> None:
    replies = [recorded(wire, "max_output", streamed), recorded(wire, "ok", streamed)]
    message = assert_no_retry(await run(wire, replies, streamed), StopReason.MAX_OUTPUT)
    assert message.text == CUT  # the partial JSON kept, for resume()


OLLAMA_GATEWAY = Vendor(
    "ollama-gateway",
    "ollama",
    "http://localhost:11434",
    key_required=False,
    http_refusals=(HTTPRefusal(403, "error", message_path="error"),),
)
"""Ollama's own wire has no refusal; a gateway in front of it that refuses with an
HTTP 403 is a vendor row like any other (``http_refusals``)."""


async def test_no_retry_on_a_refusal(wire: Wire, streamed: bool) -> None:
    vendor: Vendor | None = None
    if wire.protocol == "ollama":
        first, vendor = (
            Reply.file(HERE / "ollama__structured_refusal_403.json", 403),
            OLLAMA_GATEWAY,
        )
    else:
        first = recorded(wire, "refusal", streamed)
    out = await run(wire, [first, recorded(wire, "ok", streamed)], streamed, vendor=vendor)
    assert_no_retry(out, StopReason.REFUSAL)
    assert AgentEventType.MODEL_STOPPED in out.kinds()


async def test_no_retry_when_the_context_is_full(wire: Wire, streamed: bool) -> None:
    ok = recorded(wire, "ok", streamed)
    if wire.protocol in ("anthropic", "openai-chat"):  # a stop value on these wires
        vendor = "glm" if wire.protocol == "openai-chat" else None
        out = await run(
            wire, [recorded(wire, "context_full", streamed), ok], streamed, vendor=vendor
        )
        assert_no_retry(out, StopReason.CONTEXT_FULL)
        return
    # the others say it with an HTTP 400 before any output: raised, never retried
    overflow = Reply.file(HERE / f"{wire.prefix}__structured_context_overflow_400.json", 400)
    out = await run(wire, [overflow, ok], streamed)
    assert isinstance(out.error, ContextOverflowError)
    assert len(out.requests) == 1 and out.unused == 1


async def test_no_retry_when_interrupted(wire: Wire, streamed: bool) -> None:
    ok = recorded(wire, "ok", streamed)
    if streamed or wire.protocol != "anthropic":
        out = await run(wire, [recorded(wire, "interrupted", streamed), ok], streamed)
        message = assert_no_retry(out, StopReason.INTERRUPTED)
        assert message.text == CUT
        return
    # an Anthropic body has no interrupted form: the host cancels while it is awaited
    stalled = Reply.file(HERE / "anthropic__structured_ok.json", stall_after=0, stall_seconds=3)
    out = await run(wire, [stalled, ok], streamed, cancel_after=0.5)
    assert out.error is None and out.message is None  # cancelled: no RUN_COMPLETED
    last = out.history[-1]
    assert isinstance(last, AssistantMessage) and last.stop is not None
    assert last.stop.reason is StopReason.INTERRUPTED and last.stop.detail["cancelled"]
    assert AgentEventType.OUTPUT_INVALID not in out.kinds()
    assert len(out.requests) == 1 and out.unused == 1


async def test_the_vertex_rows_send_the_openapi_subset() -> None:
    wire = WIRES["gemini"]
    out = await run(wire, [recorded(wire, "ok", False)], False, vendor=get_vendor("vertex-express"))
    config = out.requests[0]["generationConfig"]
    assert "responseJsonSchema" not in config
    assert config["responseSchema"]["required"] == ["name", "population"]
    CHECKS["gemini"](out.requests[0])
    assert out.message is not None and out.message.output == PARIS
