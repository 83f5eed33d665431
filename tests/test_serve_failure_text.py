"""What a page is told when a run fails (``serve/_failure.py``): the kind of failure in
one sentence, the provider's message only where it is safe (masked, one line, cut
short), never a ``repr``. Through a real server: test_serve.py (401) and the 429 here."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import chat_body, make_agent, read_chunks, running_server, scenario_reply
from zett_agent.errors import (
    CallTimeoutError,
    ConfigError,
    ContextOverflowError,
    PoolTimeoutError,
    ProviderHTTPError,
    RateLimitError,
    ResponseLimitError,
    StreamError,
    TransportError,
    UnexpectedContentError,
)
from zett_agent.serve import create_app
from zett_agent.serve._failure import MAX_SHOWN, failure_text, safe_excerpt
from zett_agent.testing import ReplayServer

KEY = "sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"

CASES = [
    (
        ProviderHTTPError(f"Incorrect API key provided: {KEY}", provider="openai", status=401),
        "Authentication failed: the model provider (openai) did not accept the credentials "
        "(HTTP 401). Check the API key the server uses.",
    ),
    (
        ProviderHTTPError("forbidden", provider="gemini", status=403, error_type="PERMISSION"),
        "Authentication failed: the model provider (gemini) did not accept the credentials "
        "(HTTP 403, PERMISSION). Check the API key the server uses.",
    ),
    (
        RateLimitError("slow down", provider="anthropic", status=429, retry_after=12.4),
        "The model provider (anthropic) is rate limiting this server (HTTP 429). "
        "Try again in 12 s.",
    ),
    (
        RateLimitError("slow down", provider="openai", status=429),
        "The model provider (openai) is rate limiting this server (HTTP 429). Try again later.",
    ),
    (
        RateLimitError(
            "You exceeded your current quota", provider="openai", status=429, quota_exhausted=True
        ),
        "The model provider (openai) says the quota or billing balance is used up "
        "(HTTP 429): You exceeded your current quota",
    ),
    (
        ProviderHTTPError(
            "Overloaded", provider="anthropic", status=529, error_type="overloaded_error"
        ),
        "The model provider (anthropic) failed (HTTP 529, overloaded_error): Overloaded",
    ),
    (
        ProviderHTTPError("model 'x' not found", provider="ollama", status=404),
        "The model provider (ollama) rejected the request (HTTP 404): model 'x' not found",
    ),
    (
        StreamError("internal error", provider="openai", status=200, error_type="server_error"),
        "The model provider (openai) reported an error in its stream "
        "(HTTP 200, server_error): internal error",
    ),
    (
        ContextOverflowError("prompt is too long", provider="anthropic", status=400),
        "The conversation is too long for the model's context window (HTTP 400): "
        "start a new chat or use a model with a larger window.",
    ),
    (
        TransportError("ConnectError: [Errno 111] Connection refused"),
        "The model provider could not be reached (ConnectError: [Errno 111] Connection refused).",
    ),
    (
        CallTimeoutError("no output within 30 s", limit="first_output_timeout"),
        "The model did not answer in time (no output within 30 s).",
    ),
    (
        PoolTimeoutError("pool"),
        "Too many model calls at once on this server: no connection came free in time.",
    ),
    (
        ResponseLimitError("too big", limit="max_response_bytes"),
        "The model's answer was larger than a size limit (max_response_bytes).",
    ),
    (
        UnexpectedContentError(
            "html", status=200, content_type="text/html", excerpt="<html>login</html>"
        ),
        "The model's address answered with text/html (HTTP 200), not its API: "
        "a proxy or login page?",
    ),
    (
        ConfigError("no API key: set OPENAI_API_KEY"),
        "The server's configuration cannot work: no API key: set OPENAI_API_KEY",
    ),
    (
        RuntimeError("boom <object at 0x7f>"),
        "The run failed with an internal error. The server log has the details.",
    ),
]


@pytest.mark.parametrize(("error", "text"), CASES, ids=[type(e).__name__ for e, _ in CASES])
def test_each_kind_of_failure_is_said_in_one_sentence(error: Exception, text: str) -> None:
    assert failure_text(error) == text


def test_an_authentication_failure_never_shows_what_the_provider_said() -> None:
    text = failure_text(ProviderHTTPError(f"bad key {KEY}", provider="openai", status=401))
    assert KEY not in text and "bad key" not in text


def test_a_provider_message_is_masked_one_line_and_cut_short() -> None:
    message = f"failed for token {KEY}\n\nand tb=ghp_abcdefghijklmnop1234 " + "x " * 400
    text = failure_text(ProviderHTTPError(message, provider="openai", status=500))
    assert KEY not in text and "ghp_abcdefghijklmnop1234" not in text and "\n" not in text
    assert "[redacted]" in text
    assert len(safe_excerpt(message)) == MAX_SHOWN and safe_excerpt(message).endswith("…")
    assert safe_excerpt("Overloaded") == "Overloaded"  # ordinary words are kept


def test_no_failure_text_is_a_repr() -> None:
    for error, _ in CASES:
        text = failure_text(error)
        assert repr(error) not in text and "Error(" not in text


@pytest.fixture
def server() -> Iterator[str]:
    with (
        ReplayServer(route=scenario_reply) as replay,
        running_server(create_app(make_agent(replay.url), owns=True)) as url,
    ):
        yield url


def test_a_rate_limited_run_says_so_with_the_wait(server: str) -> None:
    response = httpx.post(f"{server}/api/chat", json=chat_body("q1", "rate limit"), timeout=30)
    chunks = read_chunks(response.text)
    assert [c["type"] for c in chunks] == ["error", "finish"]
    assert chunks[0]["errorText"] == (
        "The model provider (openai) is rate limiting this server (HTTP 429, requests). "
        "Try again in 7 s."
    )
