"""Models that keep a run going, over real sockets: a fallback chain across
providers (a 429, then a 529, then an answer), the circuit breaker shared by a
process's agents, no fallback after output unless the host allows it, provider
records replayed only to the vendor and model that made them; typed rate limits
with reset headers on every protocol, quota/billing 429s not retried, and a
per-model concurrency limit whose wait is not charged to the call's clocks."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

import anyio
import pytest

from conftest import RECORDINGS
from faults.wire import WIRES, Wire
from zett_agent import (
    AgentRunConfig,
    CircuitBreaker,
    FallbackModel,
    Model,
    ModelRequest,
    ProviderHTTPError,
    RateLimitError,
    StopReason,
    UserMessage,
    create_agent,
)
from zett_agent.testing import ReplayServer, ReplayTransport, Reply

TEXTS = ["Hello ", "there."]


def answer(wire: Wire, texts: list[str] = TEXTS, **options: Any) -> Reply:
    return wire.reply(wire.answer(texts), **options)


def error(wire: Wire, status: int, body: Any = None, **headers: str) -> Reply:
    data = body if body is not None else wire.error_body(status, f"HTTP {status}")
    return Reply.json(data, status=status, headers=dict(headers))


def member(wire: Wire, server: ReplayServer | ReplayTransport, **options: Any) -> Model:
    options.setdefault("max_retries", 0)
    if isinstance(server, ReplayTransport):
        options["client"] = server.client()
    return Model(wire.vendor, f"{wire.name}-m", base_url=server.url, api_key="k", **options)


def loop_time() -> float:
    return asyncio.get_running_loop().time()


@pytest.fixture(params=[True, False], ids=["streamed", "whole"])
def stream(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


# ---------------------------------------------------------------- fallback chains


async def test_fallback_across_providers_429_then_529_then_an_answer(stream: bool) -> None:
    openai, anthropic, gemini = WIRES["openai-chat"], WIRES["anthropic"], WIRES["gemini"]
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with (
        ReplayServer([error(openai, 429, **{"retry-after": "0"})]) as first,
        ReplayServer([error(anthropic, 529, overloaded)]) as second,
        ReplayServer(
            [answer(gemini) if stream else Reply.json(_gemini_body("Hello there."))]
        ) as third,
    ):
        chain = FallbackModel(
            [
                member(openai, first, stream=stream),
                member(anthropic, second, stream=stream),
                member(gemini, third, stream=stream),
            ],
            breaker=CircuitBreaker(),
        )
        agent = await create_agent(chain, AgentRunConfig(prompt_cache=False))
        message = await agent.run("hi")
        await agent.aclose()
    assert message.text == "Hello there." and message.stop is None
    assert message.provider == "google"  # who answered (model: as Gemini reported it)
    assert (message.attempts[-1].provider, message.attempts[-1].model) == ("google", "gemini-m")
    outcomes = [(a.provider, a.outcome) for a in message.attempts]
    assert outcomes == [("openai", "failed"), ("anthropic", "failed"), ("google", "answered")]
    assert "RateLimitError 429" in (message.attempts[0].error or "")
    assert "529 overloaded_error" in (message.attempts[1].error or "")
    assert len(first.requests) == len(second.requests) == len(third.requests) == 1
    assert third.requests[0].json["contents"][-1]["parts"] == [{"text": "hi"}]


def _gemini_body(text: str) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
    }


async def test_a_billing_429_is_not_retried_but_the_chain_moves_on() -> None:
    responses, chat = WIRES["openai-responses"], WIRES["openai-chat"]
    quota = json.loads((RECORDINGS / "openai_responses__429_insufficient_quota.json").read_text())
    with (
        ReplayServer([error(responses, 429, quota)]) as first,
        ReplayServer([answer(chat)]) as second,
    ):
        alone = member(responses, first, max_retries=3)
        with pytest.raises(RateLimitError) as caught:
            await alone.complete(ModelRequest("m", [UserMessage("hi")]))
        assert caught.value.quota_exhausted and not caught.value.retryable
        assert len(first.requests) == 1  # not retried
        first.add(error(responses, 429, quota))
        chain = FallbackModel([member(responses, first), member(chat, second)], breaker=None)
        response = await _complete(chain)
        await alone.aclose()
    assert response.text == "Hello there." and response.provider == "openai"
    assert [a.outcome for a in response.attempts] == ["failed", "answered"]


async def _complete(model: Any, text: str = "hi") -> Any:
    final = None
    async for item in model.stream(ModelRequest("", [UserMessage(text)])):
        final = item
    return final


async def test_errors_another_model_would_not_fix_are_raised_at_once() -> None:
    chat, anthropic = WIRES["openai-chat"], WIRES["anthropic"]
    with ReplayServer([error(chat, 400)]) as first, ReplayServer([]) as second:
        chain = FallbackModel([member(chat, first), member(anthropic, second)], breaker=None)
        with pytest.raises(ProviderHTTPError) as caught:
            await _complete(chain)
    assert caught.value.status == 400 and second.requests == []
    assert [a.outcome for a in caught.value.attempts] == ["failed"]


async def test_every_model_failing_raises_the_last_error_with_all_attempts() -> None:
    chat, gemini = WIRES["openai-chat"], WIRES["gemini"]
    with ReplayServer([error(chat, 503)]) as first, ReplayServer([error(gemini, 500)]) as second:
        chain = FallbackModel([member(chat, first), member(gemini, second)], breaker=None)
        with pytest.raises(ProviderHTTPError) as caught:
            await _complete(chain)
    assert caught.value.status == 500
    assert [(a.provider, a.outcome) for a in caught.value.attempts] == [
        ("openai", "failed"),
        ("google", "failed"),
    ]


async def test_the_circuit_breaker_is_shared_by_the_agents_of_a_process() -> None:
    chat, anthropic = WIRES["openai-chat"], WIRES["anthropic"]
    breaker = CircuitBreaker(failures=2, cooldown=60)
    with (
        ReplayServer([error(chat, 503), error(chat, 503)]) as flaky,
        ReplayServer([answer(anthropic) for _ in range(3)]) as steady,
    ):
        agents = [
            await create_agent(
                FallbackModel([member(chat, flaky), member(anthropic, steady)], breaker=breaker)
            )
            for _ in range(3)
        ]
        messages = [await agent.run("hi") for agent in agents]
        for agent in agents:
            await agent.aclose()
    assert len(flaky.requests) == 2  # the third agent's call skipped it: the circuit is open
    assert [a.outcome for a in messages[2].attempts] == ["skipped", "answered"]
    assert "circuit open" in (messages[2].attempts[0].error or "")
    assert all(m.text == "Hello there." for m in messages)


def test_a_circuit_half_opens_after_its_cooldown() -> None:
    now = [0.0]
    breaker = CircuitBreaker(failures=1, cooldown=10, clock=lambda: now[0])
    breaker.failed("p:m")
    assert breaker.open_for("p:m") == 10
    now[0] = 10.5
    assert breaker.open_for("p:m") is None  # one call may go
    breaker.failed("p:m")
    assert breaker.open_for("p:m") == 10  # failed again: open again
    breaker.succeeded("p:m")
    assert breaker.open_for("p:m") is None


@pytest.mark.looptime
async def test_the_cooldown_is_measured_on_the_event_loops_clock() -> None:
    """By default the breaker reads the running loop's clock: on virtual time a
    60 s cooldown passes with the loop's 60 s, at no cost in wall time."""
    breaker = CircuitBreaker(failures=1, cooldown=60)
    breaker.failed("p:m")
    await anyio.sleep(59)
    left = breaker.open_for("p:m")
    assert left is not None and abs(left - 1) < 0.005, left
    await anyio.sleep(1.5)
    assert breaker.open_for("p:m") is None  # one call may go


async def test_no_fallback_after_output_unless_the_host_allows_it() -> None:
    chat, anthropic = WIRES["openai-chat"], WIRES["anthropic"]
    cut = answer(chat, drop_after=3)  # text streamed, then the connection drops
    with ReplayServer([cut]) as first, ReplayServer([]) as second:
        chain = FallbackModel(
            [member(chat, first), member(anthropic, second)],
            fallback_on={StopReason.INTERRUPTED},
            breaker=None,
        )
        response = await _complete(chain)
    assert response.stop_info.reason is StopReason.INTERRUPTED and second.requests == []

    with (
        ReplayServer([answer(chat, drop_after=3)]) as first,
        ReplayServer([answer(anthropic)]) as second,
    ):
        chain = FallbackModel(
            [member(chat, first), member(anthropic, second)],
            fallback_on={StopReason.INTERRUPTED},
            after_output=True,
            breaker=None,
        )
        response = await _complete(chain)
    assert response.text == "Hello there." and response.provider == "anthropic"
    assert response.attempts[0].outcome == "stopped"
    assert response.attempts[0].discarded_output  # the host saw text it must drop


async def test_a_refusal_falls_back_when_the_host_chooses_it() -> None:
    anthropic, responses = WIRES["anthropic"], WIRES["openai-responses"]
    refusal = json.loads((RECORDINGS / "anthropic__refusal_stop_details.json").read_text())
    with ReplayServer([Reply.json(refusal)]) as first, ReplayServer([answer(responses)]) as second:
        chain = FallbackModel(
            [member(anthropic, first, stream=False), member(responses, second)],
            fallback_on={StopReason.REFUSAL},
            breaker=None,
        )
        agent = await create_agent(chain)
        message = await agent.run("hi")
        await agent.aclose()
    assert message.stop is None and message.provider == "openai-responses"
    assert [(a.outcome, a.stop) for a in message.attempts] == [
        ("stopped", "refusal"),
        ("answered", None),
    ]


async def test_records_are_replayed_only_to_the_vendor_and_model_that_made_them() -> None:
    anthropic, chat = WIRES["anthropic"], WIRES["openai-chat"]

    def event(kind: str, **data: Any) -> bytes:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()

    thinking_block = {"type": "thinking", "thinking": "", "signature": ""}
    thinking = [
        event("message_start", message={"model": "claude-x", "usage": {"input_tokens": 3}}),
        event("content_block_start", index=0, content_block=thinking_block),
        event(
            "content_block_delta",
            index=0,
            delta={"type": "thinking_delta", "thinking": "Let me think."},
        ),
        event(
            "content_block_delta", index=0, delta={"type": "signature_delta", "signature": "SIG=="}
        ),
        event("content_block_stop", index=0),
        event("content_block_start", index=1, content_block={"type": "text", "text": ""}),
        event("content_block_delta", index=1, delta={"type": "text_delta", "text": "First."}),
        event("content_block_stop", index=1),
        event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 5}),
        event("message_stop"),
    ]
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with (
        ReplayServer(
            [anthropic.reply(thinking), error(anthropic, 529, overloaded), answer(anthropic)]
        ) as claude,
        ReplayServer([answer(chat, ["Second."])]) as gpt,
    ):
        chain = FallbackModel([member(anthropic, claude), member(chat, gpt)], breaker=None)
        agent = await create_agent(chain, AgentRunConfig(prompt_cache=False))
        first = await agent.run("one")
        second = await agent.run("two")  # Claude overloaded: GPT answers
        await agent.run("three")  # Claude again
        await agent.aclose()
    assert first.provider == "anthropic" and first.reasoning == "Let me think."
    assert second.provider == "openai"
    sent_to_gpt = gpt.requests[0].json["messages"]
    assert {"role": "assistant", "content": "First."} in sent_to_gpt  # text, no foreign record
    assert "SIG==" not in json.dumps(sent_to_gpt)
    sent_to_claude = claude.requests[2].json["messages"]
    assert sent_to_claude[1]["content"][0] == {
        "type": "thinking",
        "thinking": "Let me think.",
        "signature": "SIG==",
    }  # its own record, exactly
    assert sent_to_claude[3] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Second."}],
    }


def test_zett_run_takes_a_fallback_chain() -> None:
    chat, anthropic = WIRES["openai-chat"], WIRES["anthropic"]
    quota = {
        "error": {"message": "quota", "type": "insufficient_quota", "code": "insufficient_quota"}
    }
    with (
        ReplayServer([error(chat, 429, quota)]) as first,
        ReplayServer([answer(anthropic)]) as second,
    ):
        env = {
            **os.environ,
            "COLUMNS": "200",
            "ZETT_OPENAI_BASE_URL": first.url,
            "OPENAI_API_KEY": "k",
            "ZETT_ANTHROPIC_BASE_URL": second.url,
            "ANTHROPIC_API_KEY": "k",
        }
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "zett_agent.cli",
                "run",
                "--tools",
                "none",
                "--model",
                "openai:gpt-x,anthropic:claude-x",
                "hi",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello there."
    assert "answered by anthropic:" in done.stderr and "openai:gpt-x failed" in done.stderr


# ---------------------------------------------------------------- rate limits


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.mark.looptime  # the retry wait is virtual: exactly what the provider asked for
async def test_a_429_is_a_typed_rate_limit_error_with_its_reset_time(wire: Wire) -> None:
    with ReplayTransport([error(wire, 429, **{"retry-after-ms": "300"})]) as server:
        model = member(wire, server, max_retries=0)
        before = time.time()  # reset_at is a wall-clock time (data), not a duration
        with pytest.raises(RateLimitError) as caught:
            await model.complete(ModelRequest("m", [UserMessage("hi")]))
        assert caught.value.retry_after == pytest.approx(0.3)
        assert caught.value.reset_at == pytest.approx(before + 0.3, abs=0.5)
        assert caught.value.retryable
        retrying = member(wire, server, max_retries=1)
        started = loop_time()
        server.add(error(wire, 429, **{"retry-after-ms": "300"}))
        server.add(answer(wire))
        server.requests.clear()
        response = await retrying.complete(ModelRequest("m", [UserMessage("hi")]))
        waited = loop_time() - started
        await model.aclose()
        await retrying.aclose()
    assert response.text == "Hello there."
    assert abs(waited - 0.3) < 0.005, waited  # the wait the provider asked for, no more


@pytest.mark.parametrize(
    ("vendor", "headers"),
    [
        (
            "anthropic",
            {
                "anthropic-ratelimit-requests-remaining": "0",
                "anthropic-ratelimit-requests-reset": "RFC3339",
            },
        ),
        (
            "openai",
            {
                "x-ratelimit-remaining-requests": "0",
                "x-ratelimit-reset-requests": "250ms",
                "x-ratelimit-reset-tokens": "6m0s",
            },
        ),
        ("openrouter", {"x-ratelimit-reset": "EPOCH_MS"}),
    ],
)
async def test_providers_reset_headers_give_the_wait(vendor: str, headers: dict[str, str]) -> None:
    import datetime

    soon = time.time() + 0.4
    stamp = datetime.datetime.fromtimestamp(soon, datetime.UTC).isoformat().replace("+00:00", "Z")
    headers = {
        k: v.replace("RFC3339", stamp).replace("EPOCH_MS", str(int(soon * 1000)))
        for k, v in headers.items()
    }
    wire = WIRES["anthropic" if vendor == "anthropic" else "openai-chat"]
    with ReplayServer([error(wire, 429, **headers)]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(RateLimitError) as caught:
            await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()
    # the exhausted limit's reset (not the later token reset of 6 minutes)
    assert caught.value.reset_at == pytest.approx(soon, abs=0.35)
    assert caught.value.retry_after is not None and caught.value.retry_after < 1


async def test_a_gemini_resource_exhausted_with_retry_info_stays_retryable() -> None:
    body = json.loads((RECORDINGS / "gemini__429_RESOURCE_EXHAUSTED_retryinfo.json").read_text())
    with ReplayServer([Reply.json(body, status=429)]) as server:
        model = Model(
            "google", "m", base_url=server.url, api_key="k", max_retries=2, max_retry_wait=5
        )
        with pytest.raises(RateLimitError) as caught:
            await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()
    assert caught.value.retryable and not caught.value.quota_exhausted
    assert caught.value.retry_after == pytest.approx(34.4)
    assert len(server.requests) == 1  # 34.4 s is over max_retry_wait: raised, not slept


@pytest.mark.looptime
async def test_concurrency_limit_wait_is_not_charged_to_the_clocks() -> None:
    wire = WIRES["anthropic"]
    # ~3 s of streaming (on virtual time); the first event after 0.35 s, inside the
    # 1.5 s first-output limit
    slow = answer(wire, ["a", "b", "c", "d", "e", "f"], delay=0.35)
    with ReplayTransport([slow, answer(wire)]) as server:
        options: dict[str, Any] = {
            "max_concurrency": 1,
            "first_output_timeout": 1.5,
            "max_retries": 0,
            "client": server.client(),
        }
        one = Model("anthropic", "slot-test", base_url=server.url, api_key="k", **options)
        two = Model("anthropic", "slot-test", base_url=server.url, api_key="k", **options)
        assert one.slots is two.slots  # one limit per provider, model and base URL
        results: list[Any] = []
        finished: list[float] = []
        started = loop_time()

        async def call(model: Model) -> None:
            results.append(await model.complete(ModelRequest("slot-test", [UserMessage("hi")])))
            finished.append(loop_time() - started)

        async with anyio.create_task_group() as group:
            group.start_soon(call, one)
            await anyio.sleep(0.05)
            group.start_soon(call, two)
        await one.aclose()
        await two.aclose()
    # the second call waited for the slot as long as the first streamed (all its
    # chunks, 0.35 s apart), longer than its first-output limit of 1.5 s, and still
    # answered: the wait is not charged to its clocks
    assert [r.stop_info.reason for r in results] == [StopReason.END_TURN, StopReason.END_TURN]
    assert [r.text for r in results] == ["abcdef", "Hello there."]
    assert abs(finished[0] - 0.35 * (len(slow.chunks) - 1)) < 0.005, finished
    assert finished[0] > 1.5 and abs(finished[1] - finished[0]) < 0.005, finished


def test_reset_header_formats() -> None:
    from zett_agent.vendors import reset_time

    now = 1_000_000_000.0 + 1
    assert reset_time("6m0s", now) == now + 360
    assert reset_time("1h2m3.5s", now) == now + 3723.5
    assert reset_time("20ms", now) == pytest.approx(now + 0.02)
    assert reset_time("2", now) == now + 2
    assert reset_time("1700000000000", now) == 1_700_000_000.0
    assert reset_time("2026-01-01T00:00:00Z", now) == 1767225600.0
    assert reset_time("soon", now) is None
