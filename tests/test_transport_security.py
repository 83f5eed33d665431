"""Secrets and what came back: the API key never leaves zett in provider text,
credentials never follow a redirect to another origin, and a reply of the wrong kind
(an HTML page, a whole JSON body to a streamed call) is told apart."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from zett_agent import (
    AgentClient,
    AgentRunConfig,
    Model,
    ProviderHTTPError,
    StopReason,
    create_agent,
)
from zett_agent.errors import TransportError, UnexpectedContentError
from zett_agent.model._redact import REDACTED, Redactor, secrets_of
from zett_agent.testing import ReplayServer, Reply

KEY = "sk-live-0123456789abcdef"
GATEWAY = "gw-token-fedcba9876543210"
RECORDINGS = Path(__file__).parent / "recordings"


def anthropic_events(*events: dict[str, Any]) -> Reply:
    return Reply.sse((e["type"], e) for e in events)


START = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
         "model": "claude-x", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 3, "output_tokens": 1}}}  # fmt: skip
BLOCK = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}


def text(piece: str) -> dict[str, Any]:
    return {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": piece},
    }


# ---------------------------------------------------------------- redaction


async def test_an_error_body_echoing_the_key_is_redacted() -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "auth",
            "code": "invalid_api_key", "param": KEY}}  # fmt: skip
    with ReplayServer([Reply.json(body, status=401)]) as server:
        model = Model("openai", "m", base_url=server.url, api_key=KEY)
        with pytest.raises(ProviderHTTPError) as caught:
            await model.complete(_request())
        await model.aclose()
    error = caught.value
    seen = [str(error), repr(error.args), error.message, json.dumps(error.body)]
    assert all(KEY not in s for s in seen), seen
    assert REDACTED in error.message and error.code == "invalid_api_key"


def _request() -> Any:
    from zett_agent import ModelRequest, UserMessage

    return ModelRequest("m", [UserMessage("hi")])


async def test_the_key_reaches_no_event_span_log_or_stored_row(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An in-stream error after output echoes the key and a gateway token the host
    passed as a header: the stop (message, detail), the events, the spans, the step
    log record and the SQLite file never hold either."""
    echo = f"upstream rejected key {KEY} (gateway {GATEWAY})"
    reply = anthropic_events(
        START, BLOCK, text("Partial "), text(f"answer {KEY}"),
        {"type": "error", "error": {"type": "api_error", "message": echo}},
    )  # fmt: skip
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = tmp_path / "s.sqlite3"
    with ReplayServer([reply]) as server:
        model = Model(
            "anthropic",
            "m",
            base_url=server.url,
            api_key=KEY,
            headers={"x-gateway-token": GATEWAY},
        )
        config = AgentRunConfig("t", tracer_provider=tracer_provider)
        agent = await create_agent(model, config)
        events = []
        with caplog.at_level(logging.DEBUG):
            async with AgentClient(agent, store, session_id="s") as client:
                async for event in client.stream("hi"):
                    events.append(event)
        await agent.aclose()
    final = events[-1].message
    assert final is not None and final.stop is not None
    assert final.stop.reason is StopReason.INTERRUPTED
    assert final.stop.message == f"upstream rejected key {REDACTED} (gateway {REDACTED})"
    assert final.text == f"Partial answer {REDACTED}"
    places = {
        "events": repr(events),
        "spans": repr(
            [(s.name, dict(s.attributes or {}), s.events) for s in exporter.get_finished_spans()]
        ),
        "logs": caplog.text + repr([r.__dict__ for r in caplog.records]),
        "store": store.read_bytes().decode("utf-8", "replace"),
    }
    wal = tmp_path / "s.sqlite3-wal"
    if wal.exists():
        places["store"] += wal.read_bytes().decode("utf-8", "replace")
    for where, seen in places.items():
        assert KEY not in seen and GATEWAY not in seen, where
    assert "upstream rejected key" in places["store"]  # the stop itself was stored


def test_redactor_rules() -> None:
    secrets = secrets_of(KEY, {"Authorization": f"Bearer {GATEWAY}", "x-short-key": "abc"})
    assert secrets == {KEY, GATEWAY, f"Bearer {GATEWAY}"}  # "abc" is too short to redact
    redactor = Redactor(secrets)
    value = {"a": [f"x{KEY}y", {"k": GATEWAY}], KEY: 1, "n": 2}
    assert redactor.value(value) == {
        "a": [f"x{REDACTED}y", {"k": REDACTED}],
        REDACTED: 1,
        "n": 2,
    }
    clean = {"a": ["nothing", {"b": 1}]}
    assert redactor.value(clean) is clean
    assert not Redactor(secrets_of(None, {}))


# ---------------------------------------------------------------- redirects


def redirect_to(url: str, status: int = 307) -> Reply:
    return Reply.body(b"", status=status, headers={"location": url + "/v1/messages"})


ANSWER = RECORDINGS / "anthropic__stream_tool_use_input_json_delta.sse"


@pytest.mark.parametrize(
    ("vendor", "header"),
    [("anthropic", "x-api-key"), ("google", "x-goog-api-key"), ("openai", "authorization")],
)
async def test_credentials_never_follow_a_redirect_to_another_origin(
    vendor: str, header: str
) -> None:
    other = ReplayServer([Reply.json({"error": {"message": "who are you"}}, status=401)])
    with other, ReplayServer([redirect_to(other.url)]) as server:
        client = httpx.AsyncClient(follow_redirects=True)
        model = Model(
            vendor,
            "m",
            base_url=server.url,
            api_key=KEY,
            client=client,
            headers={"x-gateway-token": GATEWAY},
        )
        with pytest.raises(ProviderHTTPError):
            await model.complete(_request())
        await client.aclose()
    assert server.requests[0].headers[header].endswith(KEY)  # the provider got it
    followed = other.requests[0].headers
    assert header not in followed and "x-gateway-token" not in followed, followed
    assert all(KEY not in v and GATEWAY not in v for v in followed.values()), followed


async def test_a_same_origin_redirect_keeps_the_credentials() -> None:
    with ReplayServer([]) as server:
        server.add(redirect_to(server.url, status=308), Reply.file(ANSWER))
        client = httpx.AsyncClient(follow_redirects=True)
        model = Model("anthropic", "m", base_url=server.url, api_key=KEY, client=client)
        response = await model.complete(_request())
        await client.aclose()
    assert response.tool_calls and len(server.requests) == 2
    assert server.requests[1].headers["x-api-key"] == KEY


async def test_a_client_that_does_not_follow_redirects_gets_the_status() -> None:
    with ReplayServer([redirect_to("http://127.0.0.1:9")]) as server:
        model = Model("anthropic", "m", base_url=server.url, api_key=KEY)
        with pytest.raises(ProviderHTTPError) as caught:
            await model.complete(_request())
        await model.aclose()
    assert caught.value.status == 307 and len(server.requests) == 1


# ---------------------------------------------------------------- what came back


@pytest.mark.parametrize("ctype", ["text/html; charset=utf-8", "application/xhtml+xml"])
@pytest.mark.parametrize("stream", [True, False])
async def test_an_html_page_is_a_typed_error_that_says_so(ctype: str, stream: bool) -> None:
    page = b"<!doctype html><html><body><h1>Sign in to the proxy</h1></body></html>"
    with ReplayServer([Reply.body(page, content_type=ctype), Reply.body(page)]) as server:
        model = Model("openai", "m", base_url=server.url, api_key=KEY, stream=stream)
        with pytest.raises(UnexpectedContentError) as caught:
            await model.complete(_request())
        await model.aclose()
    error = caught.value
    assert error.status == 200 and error.content_type == ctype.partition(";")[0]
    assert "Sign in to the proxy" in error.excerpt and ctype.partition(";")[0] in str(error)
    assert not error.retryable and len(server.requests) == 1


@pytest.mark.parametrize(
    ("vendor", "body"),
    [
        ("anthropic", "anthropic__refusal_stop_details.json"),
        ("openai", "openai_chat__refusal_field_structured_output.json"),
        ("google", "gemini__finish_max_tokens.json"),
    ],
)
async def test_a_whole_json_body_to_a_streamed_call_is_decoded_as_a_body(
    vendor: str, body: str
) -> None:
    data = (RECORDINGS / body).read_bytes()
    with ReplayServer([Reply.body(data), Reply.body(data)]) as server:
        streamed = Model(vendor, "m", base_url=server.url, api_key=KEY)
        whole = Model(vendor, "m", base_url=server.url, api_key=KEY, stream=False)
        a = await streamed.complete(_request())
        b = await whole.complete(_request())
        await streamed.aclose()
        await whole.aclose()
    assert "stream" not in server.requests[1].json or not server.requests[1].json["stream"]
    assert a.stop_info == b.stop_info and a.text == b.text and a.tool_calls == b.tool_calls


async def test_a_corrupt_compressed_stream_is_a_typed_error() -> None:
    reply = Reply(
        [b"\x1f\x8b this is not gzip"],
        content_type="text/event-stream",
        headers={"content-encoding": "gzip"},
    )
    with ReplayServer([reply]) as server:
        model = Model("openai", "m", base_url=server.url, api_key=KEY, max_retries=0)
        with pytest.raises(TransportError) as caught:
            await model.complete(_request())
        await model.aclose()
    assert "compressed body is corrupt" in str(caught.value)
