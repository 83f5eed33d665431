"""zett's stop tables against the enums of the pinned official SDKs, the documentation
at hand offline: anthropic 2.14.0 (``StopReason``, ``BetaStopReason``), openai 3.57.0
(Chat ``finish_reason``, Responses ``IncompleteDetails.reason``, ``ResponseStatus``,
``ResponseError.code``) and google-genai 3.6.1 (``FinishReason``, ``BlockedReason``).
The pins live once, in pyproject's dev extra; the runtime never imports the SDKs.

Every value an SDK names has a decision in zett's table, and each decision is proven
through a real socket, streamed and as a body, on every vendor row of that protocol
(a row's own ``finish_reasons`` first). A newer SDK with a new value fails here
until the value is decided (in the protocol module's table, its docstring, the README
table and ``tests/recordings/SOURCES.md``).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from handwritten_wire import A_START, a_text, body, c_chunk, data, g, named, r_message, r_text
from zett_agent import Model, ModelRequest, ModelResponse, StopReason, UserMessage
from zett_agent.errors import ProviderError
from zett_agent.protocols._anthropic import STOP_REASONS
from zett_agent.protocols._gemini import FINISH_REASONS as GEMINI_FINISH
from zett_agent.protocols._openai_chat import FINISH_REASONS as CHAT_FINISH
from zett_agent.protocols._openai_responses import INCOMPLETE_REASONS
from zett_agent.testing import ReplayServer, Reply
from zett_agent.vendors import VENDORS

R = StopReason
ROOT = Path(__file__).parent.parent
SDKS = ("anthropic", "openai", "google-genai")


def _pins() -> dict[str, str]:
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = dict(item.split("==", 1) for item in dev["dev"] if "==" in item)
    return {name: pins[name] for name in SDKS}


def test_the_installed_sdks_are_the_pinned_versions() -> None:
    """The comparison below is against the versions pyproject names, no other."""
    for name, version in _pins().items():
        assert importlib.metadata.version(name) == version, name


def test_the_runtime_never_imports_an_sdk() -> None:
    code = (
        "import sys, zett_agent._agent, zett_agent.model._model, zett_agent.protocols._anthropic, "
        "zett_agent.protocols._openai_chat, zett_agent.protocols._openai_responses, "
        "zett_agent.protocols._gemini, zett_agent.protocols._ollama, zett_agent.cli._inspect; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('anthropic', 'openai', 'google')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def _literal(annotation: Any) -> list[str]:
    """The string values of a ``Literal`` (inside ``Optional``/``Union`` too)."""
    if typing.get_origin(annotation) is typing.Literal:
        return [v for v in typing.get_args(annotation) if isinstance(v, str)]
    return [v for arg in typing.get_args(annotation) for v in _literal(arg)]


def _anthropic_values() -> list[str]:
    from anthropic.types import StopReason as SDKStopReason
    from anthropic.types.beta import BetaStopReason

    return list(dict.fromkeys(_literal(SDKStopReason) + _literal(BetaStopReason)))


def _chat_values() -> list[str]:
    from openai.types.chat.chat_completion import Choice
    from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice

    body_values = _literal(Choice.model_fields["finish_reason"].annotation)
    chunk_values = _literal(ChunkChoice.model_fields["finish_reason"].annotation)
    return list(dict.fromkeys(body_values + chunk_values))


def _incomplete_values() -> list[str]:
    from openai.types.responses.response import IncompleteDetails

    return _literal(IncompleteDetails.model_fields["reason"].annotation)


def _status_values() -> list[str]:
    from openai.types.responses.response_status import ResponseStatus

    return _literal(ResponseStatus)


def _error_codes() -> list[str]:
    from openai.types.responses.response_error import ResponseError

    return _literal(ResponseError.model_fields["code"].annotation)


def _gemini_values() -> list[str]:
    from google.genai import types

    return [member.value for member in types.FinishReason]


def _block_values() -> list[str]:
    from google.genai import types

    return [member.value for member in types.BlockedReason]


# ---------------------------------------------------------------- every value is decided


@pytest.mark.parametrize(
    ("values", "table"),
    [
        (_anthropic_values, STOP_REASONS),
        (_chat_values, CHAT_FINISH),
        (_incomplete_values, INCOMPLETE_REASONS),
        (_gemini_values, GEMINI_FINISH),
    ],
    ids=["anthropic-stop_reason", "chat-finish_reason", "responses-incomplete", "gemini-finish"],
)
def test_every_sdk_value_has_a_decision(
    values: Callable[[], list[str]], table: dict[str, StopReason]
) -> None:
    sdk = values()
    assert sdk, "the SDK names no values: its types moved"
    assert [v for v in sdk if v not in table] == []


# ---------------------------------------------------------------- each decision, on the wire


async def _complete(vendor: str, reply: Reply, stream: bool) -> ModelResponse:
    with ReplayServer([reply] * 4) as server:  # an error may be retried
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        try:
            return await model.complete(ModelRequest("m", [UserMessage("hi")]))
        finally:
            await model.aclose()


def _expected(reason: StopReason) -> StopReason:
    """What an answer of plain text gets for a value mapped to ``reason`` (a label
    that says tools over text only is END_TURN: the content decides)."""
    return R.END_TURN if reason is R.TOOL_USE else reason


STREAMS = pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])


def _rows(protocol: str) -> list[str]:
    return sorted(name for name, v in VENDORS.items() if v.protocol == protocol)


def _decided(vendor: str, table: Mapping[str, StopReason], value: str) -> StopReason:
    """The vendor row's own mapping of ``value`` first, then the protocol's table."""
    return _expected(VENDORS[vendor].finish_reasons.get(value) or table[value])


@STREAMS
@pytest.mark.parametrize("value", _anthropic_values())
@pytest.mark.parametrize("vendor", _rows("anthropic"))
async def test_anthropic_values_on_the_wire(vendor: str, value: str, stream: bool) -> None:
    if stream:
        end = {"type": "message_delta", "delta": {"stop_reason": value}, "usage": {}}
        reply = named(A_START, *a_text("Hi"), end, {"type": "message_stop"})
    else:
        reply = body({"type": "message", "role": "assistant", "model": "m", "stop_reason": value,
                      "content": [{"type": "text", "text": "Hi"}]})  # fmt: skip
    info = (await _complete(vendor, reply, stream)).stop_info
    assert (info.reason, info.raw) == (_decided(vendor, STOP_REASONS, value), value)


@STREAMS
@pytest.mark.parametrize("value", _chat_values())
@pytest.mark.parametrize("vendor", _rows("openai-chat"))
async def test_chat_values_on_the_wire(vendor: str, value: str, stream: bool) -> None:
    if stream:
        reply = data(c_chunk({"content": "Hi"}), c_chunk({}, value), "[DONE]")
    else:
        choice = {"index": 0, "message": {"role": "assistant", "content": "Hi"}}
        reply = body({"object": "chat.completion", "model": "m",
                      "choices": [{**choice, "finish_reason": value}]})  # fmt: skip
    info = (await _complete(vendor, reply, stream)).stop_info
    assert (info.reason, info.raw) == (_decided(vendor, CHAT_FINISH, value), value)


def _responses_reply(response: dict[str, Any], stream: bool, terminal: str) -> Reply:
    if stream:
        return named(*r_text("Hi"), {"type": f"response.{terminal}", "response": response})
    return body(response)


@STREAMS
@pytest.mark.parametrize("value", _incomplete_values())
async def test_responses_incomplete_reasons_on_the_wire(value: str, stream: bool) -> None:
    response = {"id": "r", "object": "response", "model": "m", "status": "incomplete",
                "output": [r_message("Hi")], "incomplete_details": {"reason": value}}  # fmt: skip
    info = (await _complete("openai-responses", _responses_reply(response, stream, "incomplete"),
                            stream)).stop_info  # fmt: skip
    assert (info.reason, info.raw) == (INCOMPLETE_REASONS[value], value)


STATUSES = {
    "completed": R.END_TURN,
    "incomplete": R.OTHER,  # with no reason given: a value no table knows
    "cancelled": R.INTERRUPTED,
    "in_progress": R.OTHER,  # not a final status: the answer did not say it ended
    "queued": R.OTHER,
    "failed": R.INTERRUPTED,  # with output and no policy code
}
"""``response.status`` decisions (protocols/_openai_responses.py docstring)."""


def test_every_response_status_has_a_decision() -> None:
    assert sorted(_status_values()) == sorted(STATUSES)


@STREAMS
@pytest.mark.parametrize("status", sorted(STATUSES))
async def test_responses_statuses_on_the_wire(status: str, stream: bool) -> None:
    response = {"id": "r", "object": "response", "model": "m", "status": status,
                "output": [r_message("Hi")]}  # fmt: skip
    if status == "failed":
        response["error"] = {"code": "server_error", "message": "boom"}
    terminal = status if status in ("incomplete", "failed", "cancelled") else "completed"
    info = (await _complete("openai-responses", _responses_reply(response, stream, terminal),
                            stream)).stop_info  # fmt: skip
    assert info.reason is STATUSES[status]
    assert info.raw == ("server_error" if status == "failed" else status)


POLICY_CODES = {"bio_policy", "image_content_policy_violation", "misalignment_policy_violation"}
"""``ResponseError.code`` values that are a usage-policy block: REFUSAL. Every other
code is a failure: a typed error before output (INTERRUPTED after it)."""


@pytest.mark.parametrize("code", _error_codes())
async def test_responses_error_codes_on_the_wire(code: str) -> None:
    failed = {"id": "r", "object": "response", "model": "m", "status": "failed", "output": [],
              "error": {"code": code, "message": f"failed: {code}"}}  # fmt: skip
    reply = named({"type": "response.failed", "response": failed})
    if code in POLICY_CODES:
        info = (await _complete("openai-responses", reply, True)).stop_info
        assert (info.reason, info.raw) == (R.REFUSAL, code)
    else:
        with pytest.raises(ProviderError) as caught:
            await _complete("openai-responses", reply, True)
        assert caught.value.code == code


@STREAMS
@pytest.mark.parametrize("value", _gemini_values())
@pytest.mark.parametrize("vendor", _rows("gemini"))
async def test_gemini_values_on_the_wire(vendor: str, value: str, stream: bool) -> None:
    chunk = g([{"text": "Hi"}], value)
    info = (await _complete(vendor, data(chunk) if stream else body(chunk), stream)).stop_info
    assert (info.reason, info.raw) == (_decided(vendor, GEMINI_FINISH, value), value)


@STREAMS
@pytest.mark.parametrize("value", _block_values())
async def test_every_gemini_block_reason_is_a_refusal(value: str, stream: bool) -> None:
    blocked = {"promptFeedback": {"blockReason": value, "blockReasonMessage": "Blocked."},
               "modelVersion": "m"}  # fmt: skip
    reply = data(blocked) if stream else body(blocked)
    info = (await _complete("vertex", reply, stream)).stop_info
    assert (info.reason, info.raw, info.category) == (R.REFUSAL, value, value)
    assert info.message == "Blocked."
