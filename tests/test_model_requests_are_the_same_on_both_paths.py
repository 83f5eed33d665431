"""A model's own client hands its requests to the pool directly (no httpx client
layer); a host's ``client=`` goes through ``client.send``. Both send the same body
bytes and headers (names compared without case), keep cookies, apply the same limits
and redaction (the fault matrix runs the limits on both: virtual time on a host
client, the pool matrix on zett's)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from faults.test_fault_matrix import TEXTS
from faults.wire import WIRES
from zett_agent import ModelRequest, UserMessage
from zett_agent.errors import ProviderHTTPError, ResponseLimitError
from zett_agent.model import Model, ReadLimits
from zett_agent.model._redact import REDACTED
from zett_agent.testing import ReplayServer, Reply

KEY = "sk-both-paths-0123456789"
PATHS = ["own client (direct to the pool)", "host client (client.send)"]


async def _model(path: str, server: ReplayServer, vendor: str, **options: Any) -> Any:
    if path == PATHS[0]:
        return Model(vendor, "m", base_url=server.url, api_key=KEY, **options), None
    client = httpx.AsyncClient()
    return Model(vendor, "m", base_url=server.url, api_key=KEY, client=client, **options), client


async def _calls(path: str, server: ReplayServer, vendor: str, n: int = 1, **options: Any) -> Any:
    model, client = await _model(path, server, vendor, **options)
    try:
        request = ModelRequest("m", [UserMessage("hi ü")], max_tokens=7)
        return [await model.complete(request) for _ in range(n)]
    finally:
        await model.aclose()
        if client is not None:
            await client.aclose()


@pytest.mark.parametrize("name", list(WIRES))
async def test_both_paths_send_the_same_request(name: str) -> None:
    wire = WIRES[name]
    seen = []
    for path in PATHS:
        with ReplayServer([wire.reply(wire.answer(TEXTS))]) as server:
            (response,) = await _calls(path, server, wire.vendor)
        assert response.text == "".join(TEXTS)
        (request,) = server.requests
        headers = dict(request.headers)
        headers.pop("host")
        seen.append((request.method, request.path, headers, request.body))
    own, host = seen
    assert own == host
    assert json.loads(own[3])  # a JSON body, httpx's encoding (compact, UTF-8)
    assert own[2]["user-agent"].startswith("python-httpx/")


@pytest.mark.parametrize("path", PATHS)
async def test_cookies_a_provider_sets_are_sent_back(path: str) -> None:
    wire = WIRES["openai-chat"]
    first = wire.reply(wire.answer(TEXTS), headers={"set-cookie": "__cf_bm=abc; Path=/"})
    with ReplayServer([first, wire.reply(wire.answer(TEXTS))]) as server:
        await _calls(path, server, wire.vendor, n=2)
    assert "cookie" not in server.requests[0].headers
    assert server.requests[1].headers["cookie"] == "__cf_bm=abc"


@pytest.mark.parametrize("path", PATHS)
async def test_redaction_and_limits_hold_on_both_paths(path: str) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}.", "type": "auth"}}
    with (
        ReplayServer([Reply.json(body, status=401)]) as server,
        pytest.raises(ProviderHTTPError) as caught,
    ):
        await _calls(path, server, "openai", max_retries=0)
    assert KEY not in str(caught.value) and REDACTED in caught.value.message
    big = Reply.body(b'{"padding": "' + b"p" * 100_000 + b'"}')
    with ReplayServer([big]) as server, pytest.raises(ResponseLimitError):
        await _calls(
            path,
            server,
            "openai",
            stream=False,
            max_retries=0,
            limits=ReadLimits(max_body_bytes=10_000),
        )


async def test_the_own_client_s_timeout_and_log_line_are_httpx_s(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("INFO", logger="httpx")
    wire = WIRES["anthropic"]
    with ReplayServer([wire.reply(wire.answer(TEXTS))]) as server:
        await _calls(PATHS[0], server, wire.vendor)
    assert any(
        r.name == "httpx" and "HTTP Request: POST" in r.getMessage() and "200 OK" in r.getMessage()
        for r in caplog.records
    )


async def test_the_own_client_s_stream_makes_no_httpx_request_or_response(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The direct path's per-request cost: the pool sends the request and reads the
    response without httpx's objects (``ModelTransport.open``); a host's client gets
    both, as ``client.send`` makes them."""
    made: list[str] = []
    for cls in (httpx.Request, httpx.Response):

        def counting(self: Any, *args: Any, _init: Any = cls.__init__, **kwargs: Any) -> None:
            made.append(type(self).__name__)
            _init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    for name in WIRES:
        wire = WIRES[name]
        with ReplayServer([wire.reply(wire.answer(TEXTS))]) as server:
            (response,) = await _calls(PATHS[0], server, wire.vendor)
        assert response.text == "".join(TEXTS)
        assert made == [], (name, made)
    with ReplayServer([wire.reply(wire.answer(TEXTS))]) as server:
        (response,) = await _calls(PATHS[1], server, wire.vendor)
    assert response.text == "".join(TEXTS)
    assert made == ["Request", "Response"]
