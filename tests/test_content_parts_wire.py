"""Images, documents and audio on the wire, on every protocol, streamed and not.

Each request goes through a real socket (a ReplayServer records it) and is compared
with the shape the protocol documents, then checked against the pinned official
SDK's types (``tests/sdk_shapes.py``: anthropic, openai, google-genai, ollama). Every
vendor row's ``media`` data is checked the same way, part kind by part kind. A part
a provider cannot take is a ConfigError naming the part and the provider before
anything is sent; a tool result's parts go where the protocol's tool results take
them and are described in the text elsewhere; refusals of an input keep their
category.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import pytest

from faults.wire import TOOL, WHOLE_TEXT, WIRES, Call, Wire
from sdk_shapes import CHECKS
from zett_agent import (
    AgentRunConfig,
    AudioPart,
    ConfigError,
    DocumentPart,
    ImagePart,
    MediaPart,
    Model,
    ModelRequest,
    StopReason,
    TextPart,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    create_agent,
)
from zett_agent.protocols import get_protocol
from zett_agent.testing import ReplayServer, Reply
from zett_agent.tools import as_tool
from zett_agent.vendors import PROTOCOL_MEDIA, VENDORS, MediaInput, Vendor

PROTOCOLS = list(WIRES)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2
PNG64 = base64.b64encode(PNG).decode()
PDF = b"%PDF-1.7\n" + b"%" * 300
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 200
QUESTION = "What is in this picture?"


def image() -> ImagePart:
    return ImagePart(media_type="image/png", data=PNG, name="dot.png")


@pytest.fixture(params=PROTOCOLS)
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


@pytest.fixture(params=[True, False], ids=["streamed", "whole"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


WHOLE_CALL: dict[str, Any] = {
    "anthropic": {
        "type": "message",
        "model": "m",
        "content": [{"type": "tool_use", "id": "call_1", "name": TOOL, "input": {"text": "x"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    },
    "openai-chat": {
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": TOOL, "arguments": '{"text": "x"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    },
    "openai-responses": {
        "status": "completed",
        "output": [
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": TOOL,
                "arguments": '{"text": "x"}',
                "status": "completed",
            }
        ],
    },
    "gemini": {
        "candidates": [
            {
                "content": {"parts": [{"functionCall": {"name": TOOL, "args": {"text": "x"}}}]},
                "finishReason": "STOP",
            }
        ]
    },
    "ollama": {
        "message": {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": TOOL, "arguments": {"text": "x"}}}],
        },
        "done": True,
        "done_reason": "stop",
    },
}


def text_reply(wire: Wire, streamed: bool) -> Reply:
    return wire.reply(wire.answer(["ok"])) if streamed else Reply.json(WHOLE_TEXT[wire.name])


def call_reply(wire: Wire, streamed: bool) -> Reply:
    if streamed:
        return wire.reply(wire.answer([], call=Call(("x",))))
    return Reply.json(WHOLE_CALL[wire.name])


async def ask(
    wire: Wire,
    prompt: str | UserMessage,
    replies: list[Reply],
    *,
    streamed: bool = True,
    vendor: str | None = None,
    tools: list[Any] | None = None,
    **config: Any,
) -> list[dict[str, Any]]:
    """Run one prompt against a ReplayServer; the JSON bodies sent, each SDK-checked."""
    with ReplayServer(replies) as server:
        model = Model(vendor or wire.vendor, "m", base_url=server.url, api_key="k", stream=streamed)
        agent = await create_agent(model, AgentRunConfig(**config), tools=tools or [])
        try:
            await agent.run(prompt)
        finally:
            await agent.aclose()
    assert server.unexpected == []
    bodies = [request.json for request in server.requests]
    for body in bodies:
        CHECKS[wire.name](body)
    return bodies


def first_user(wire: Wire, body: dict[str, Any]) -> Any:
    if wire.name == "openai-responses":
        return body["input"][0]
    if wire.name == "gemini":
        return body["contents"][0]
    return body["messages"][0]


# ---------------------------------------------------------------- a user's image

IMAGE_QUESTION: dict[str, Any] = {
    "anthropic": {
        "role": "user",
        "content": [
            {"type": "text", "text": QUESTION},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG64},
                "cache_control": {"type": "ephemeral"},  # the history's breakpoint
            },
        ],
    },
    "openai-chat": {
        "role": "user",
        "content": [
            {"type": "text", "text": QUESTION},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
        ],
    },
    "openai-responses": {
        "role": "user",
        "content": [
            {"type": "input_text", "text": QUESTION},
            {
                "type": "input_image",
                "image_url": f"data:image/png;base64,{PNG64}",
                "detail": "auto",
            },
        ],
    },
    "gemini": {
        "role": "user",
        "parts": [{"text": QUESTION}, {"inlineData": {"mimeType": "image/png", "data": PNG64}}],
    },
    "ollama": {"role": "user", "content": QUESTION, "images": [PNG64]},
}


async def test_an_image_question_is_sent_as_each_protocol_documents(
    wire: Wire, streamed: bool
) -> None:
    message = UserMessage(QUESTION, (image(),))
    [body] = await ask(wire, message, [text_reply(wire, streamed)], streamed=streamed)
    assert first_user(wire, body) == IMAGE_QUESTION[wire.name]
    assert body.get("stream", streamed) is streamed or wire.name == "gemini"


async def test_text_parts_keep_their_place_among_the_images(wire: Wire) -> None:
    second = ImagePart(media_type="image/jpeg", data=b"\xff\xd8\xff" + b"j" * 50)
    message = UserMessage("Compare", (image(), TextPart("with"), second))
    [body] = await ask(wire, message, [text_reply(wire, True)])
    sent = first_user(wire, body)
    if wire.name == "ollama":  # text joined, images beside it, in order
        assert sent["content"] == "Compare\n\nwith"
        assert sent["images"] == [PNG64, base64.b64encode(second.data or b"").decode()]
        return
    items = sent["parts"] if wire.name == "gemini" else sent["content"]
    kinds = [_kind(item) for item in items]
    assert kinds == ["text", "image", "text", "image"]


def _kind(item: dict[str, Any]) -> str:
    if "text" in item and item.get("type") in (None, "text", "input_text"):
        return "text"
    return "image"


# ---------------------------------------------------------------- every vendor row


def _rows() -> list[tuple[str, str, str, bool]]:
    """(vendor, kind, media type, as URL) for every part kind each row takes."""
    cases = []
    for vendor in VENDORS.values():
        table = vendor.media if vendor.media is not None else PROTOCOL_MEDIA[vendor.protocol]
        for kind, rule in table.items():
            for media_type in sorted(rule.media_types):
                cases.append((vendor.name, kind, media_type, False))
            for media_type in sorted(rule.url_media_types)[:1]:
                cases.append((vendor.name, kind, media_type, True))
    return cases


_HEADS = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF89a",
    "image/webp": b"RIFF\x00\x00\x00\x00WEBP",
    "application/pdf": b"%PDF-",
    "audio/wav": b"RIFF\x00\x00\x00\x00WAVE",
    "audio/mpeg": b"ID3",
    "audio/flac": b"fLaC",
    "audio/ogg": b"OggS",
}
"""The first bytes of each media type zett knows by its signature (the bytes decide)."""


def _data(media_type: str) -> bytes:
    return _HEADS.get(media_type, b"") + b"bytes of the part"


def _part(kind: str, media_type: str, url: bool) -> MediaPart:
    cls = {"image": ImagePart, "document": DocumentPart, "audio": AudioPart}[kind]
    if url:
        return cls(media_type=media_type, url="https://example.com/file", name="file")
    return cls(media_type=media_type, data=_data(media_type), name="file")


@pytest.mark.parametrize(("vendor", "kind", "media_type", "url"), _rows())
def test_every_vendor_row_sends_each_part_it_takes_in_the_sdks_shape(
    vendor: str, kind: str, media_type: str, url: bool
) -> None:
    row = VENDORS[vendor]
    message = UserMessage("look", (_part(kind, media_type, url),))
    request = ModelRequest("m", [message])
    body = dict(get_protocol(row.protocol).encode_request(request, row).body)
    CHECKS[row.protocol](body)
    assert ("https://example.com/file" in str(body)) is url
    as_text = row.protocol == "anthropic" and media_type == "text/plain"  # a text source
    assert (base64.b64encode(_data(media_type)).decode() in str(body)) is (not url and not as_text)
    assert ("bytes of the part" in str(body)) is as_text


def _refused_rows() -> list[tuple[str, str]]:
    cases = []
    for vendor in VENDORS.values():
        table = vendor.media if vendor.media is not None else PROTOCOL_MEDIA[vendor.protocol]
        cases += [
            (vendor.name, kind) for kind in ("image", "document", "audio") if kind not in table
        ]
    return cases


@pytest.mark.parametrize(("vendor", "kind"), _refused_rows())
def test_a_kind_a_row_does_not_take_is_a_config_error_naming_part_and_provider(
    vendor: str, kind: str
) -> None:
    row = VENDORS[vendor]
    media_type = {"image": "image/png", "document": "application/pdf", "audio": "audio/wav"}[kind]
    part = _part(kind, media_type, False)
    request = ModelRequest("m", [UserMessage("look", (part,))])
    with pytest.raises(ConfigError) as caught:
        get_protocol(row.protocol).encode_request(request, row)
    text = str(caught.value)
    assert text.startswith(f"{vendor} cannot take part 1 of the user message")
    assert part.describe() in text and "it takes no" in text


# ---------------------------------------------------------------- refused before sending


@pytest.mark.parametrize(
    ("vendor", "part", "why"),
    [
        (
            "llamacpp",
            ImagePart(media_type="image/png", data=PNG),
            "the local model (SmolLM2-135M) reads text only: it cannot see images",
        ),
        (
            "ollama",
            ImagePart(media_type="image/png", url="https://example.com/cat.png"),
            "it takes the bytes, not a URL (zett never fetches a URL itself",
        ),
        ("anthropic", AudioPart(media_type="audio/wav", data=WAV), "it takes no audio"),
        (
            "deepseek",
            ImagePart(media_type="image/png", data=PNG),
            "DeepSeek's chat API takes text only",
        ),
        (
            "anthropic",
            ImagePart(media_type="image/png", data=b"\x89PNG\r\n\x1a\n" + b"0" * (4 * 1024 * 1024)),
            "more than the 3932160 it takes",
        ),
        (
            "xai",
            ImagePart(media_type="image/webp", data=b"RIFF0000WEBP"),
            "it takes images of image/jpeg, image/png, not image/webp",
        ),
        (
            "openai",
            DocumentPart(media_type="application/pdf", url="https://example.com/a.pdf"),
            "it takes the bytes, not a URL",
        ),
    ],
)
async def test_a_part_the_provider_cannot_take_is_refused_before_sending(
    vendor: str, part: MediaPart, why: str
) -> None:
    with ReplayServer([]) as server:
        agent = await create_agent(Model(vendor, "m", base_url=server.url, api_key="k"))
        with pytest.raises(ConfigError) as caught:
            await agent.run(UserMessage("What is this?", (part,)))
        await agent.aclose()
    assert server.requests == []  # nothing was sent
    assert f"{vendor} cannot take part 1 of the user message, {part.describe()}" in str(
        caught.value
    )
    assert why in str(caught.value)


# ---------------------------------------------------------------- documents and audio


async def test_documents_on_anthropic_are_document_blocks() -> None:
    wire = WIRES["anthropic"]
    pdf = DocumentPart(media_type="application/pdf", data=PDF, name="report.pdf")
    notes = DocumentPart(media_type="text/plain", data="plain notes ✓".encode(), name="n.txt")
    linked = DocumentPart(media_type="application/pdf", url="https://example.com/a.pdf")
    message = UserMessage("Summarize", (pdf, notes, linked))
    [body] = await ask(wire, message, [text_reply(wire, True)], prompt_cache=False)
    assert body["messages"][0]["content"][1:] == [
        {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": "application/pdf",
                "data": base64.b64encode(PDF).decode(),
            },
            "title": "report.pdf",
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain notes ✓"},
            "title": "n.txt",
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
    ]


async def test_files_and_audio_on_openai_chat() -> None:
    wire = WIRES["openai-chat"]
    pdf = DocumentPart(media_type="application/pdf", data=PDF, name="report.pdf")
    voice = AudioPart(media_type="audio/wav", data=WAV)
    mp3 = AudioPart(media_type="audio/mpeg", data=b"ID3" + b"m" * 40)
    [body] = await ask(wire, UserMessage("Listen", (pdf, voice, mp3)), [text_reply(wire, True)])
    assert body["messages"][0]["content"][1:] == [
        {
            "type": "file",
            "file": {
                "file_data": f"data:application/pdf;base64,{base64.b64encode(PDF).decode()}",
                "filename": "report.pdf",
            },
        },
        {
            "type": "input_audio",
            "input_audio": {"data": base64.b64encode(WAV).decode(), "format": "wav"},
        },
        {
            "type": "input_audio",
            "input_audio": {"data": base64.b64encode(mp3.data or b"").decode(), "format": "mp3"},
        },
    ]


async def test_files_on_openai_responses_by_bytes_and_by_url() -> None:
    wire = WIRES["openai-responses"]
    pdf = DocumentPart(media_type="application/pdf", data=PDF)
    linked = DocumentPart(media_type="application/pdf", url="https://example.com/a.pdf")
    remote = ImagePart(media_type="image/png", url="https://example.com/cat.png")
    [body] = await ask(wire, UserMessage("Read", (pdf, linked, remote)), [text_reply(wire, True)])
    assert body["input"][0]["content"][1:] == [
        {
            "type": "input_file",
            "file_data": f"data:application/pdf;base64,{base64.b64encode(PDF).decode()}",
            "filename": "document.pdf",
        },
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "auto"},
    ]


async def test_documents_and_audio_on_gemini_inline_and_by_uri() -> None:
    wire = WIRES["gemini"]
    pdf = DocumentPart(media_type="application/pdf", data=PDF)
    voice = AudioPart(media_type="audio/wav", data=WAV)
    stored = DocumentPart(media_type="application/pdf", url="gs://bucket/report.pdf")
    [body] = await ask(wire, UserMessage("Read", (pdf, voice, stored)), [text_reply(wire, True)])
    assert body["contents"][0]["parts"][1:] == [
        {"inlineData": {"mimeType": "application/pdf", "data": base64.b64encode(PDF).decode()}},
        {"inlineData": {"mimeType": "audio/wav", "data": base64.b64encode(WAV).decode()}},
        {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/report.pdf"}},
    ]


# ---------------------------------------------------------------- tool results


def write_note(text: str) -> list[Any]:
    """Draw a note."""
    return ["the chart", ImagePart(media_type="image/png", data=PNG)]


DESCRIBED = f"the chart\n[image image/png, {len(PNG)} bytes]"


def tool_result_sent(wire: Wire, body: dict[str, Any]) -> Any:
    if wire.name == "anthropic":
        return body["messages"][-1]["content"][0]["content"]
    if wire.name == "openai-responses":
        return next(i for i in body["input"] if i.get("type") == "function_call_output")["output"]
    if wire.name == "gemini":
        return body["contents"][-1]["parts"][0]["functionResponse"]
    return next(m for m in body["messages"] if m["role"] == "tool")


TOOL_RESULT: dict[str, Any] = {
    # Anthropic: tool_result.content takes image blocks
    "anthropic": [
        {"type": "text", "text": DESCRIBED},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
    ],
    # Responses: function_call_output.output takes input_image items
    "openai-responses": [
        {"type": "input_text", "text": DESCRIBED},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG64}", "detail": "auto"},
    ],
    # Gemini: functionResponse.parts (multimodal function responses)
    "gemini": {
        "name": TOOL,
        "response": {"result": DESCRIBED},
        "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG64}}],
    },
    # Chat and Ollama: a tool message is text: the image is described
    "openai-chat": {"role": "tool", "tool_call_id": "call_1", "content": DESCRIBED},
    "ollama": {"role": "tool", "content": DESCRIBED, "tool_name": TOOL},
}


async def test_a_tool_results_image_goes_where_the_protocol_takes_it(
    wire: Wire, streamed: bool
) -> None:
    replies = [call_reply(wire, streamed), text_reply(wire, streamed)]
    _, second = await ask(wire, "Draw it", replies, streamed=streamed, tools=[write_note])
    assert tool_result_sent(wire, second) == TOOL_RESULT[wire.name]


async def test_a_stored_result_without_a_description_gets_one_where_parts_cannot_go() -> None:
    wire = WIRES["openai-chat"]
    bare = ToolResultMessage("c1", "t", "see it", parts=(image(),))
    request = ModelRequest("m", [bare])
    vendor: Vendor = VENDORS["openai"]
    body = get_protocol(wire.name).encode_request(request, vendor).body
    assert body["messages"][0]["content"] == f"see it\n[image dot.png image/png, {len(PNG)} bytes]"


@dataclass(frozen=True)
class _PartsTool(Tool):
    """A tool whose result holds text parts and two images (as a Tool subclass may)."""

    async def call(self, call: ToolCall) -> ToolResultMessage:
        parts = (TextPart("t" * 200), ImagePart(media_type="image/png", data=PNG), image())
        return ToolResultMessage(call.id, call.name, "head", parts=parts)


async def test_the_gate_bounds_a_results_parts_by_bytes_and_text_by_characters() -> None:
    wire = WIRES["anthropic"]
    tool = _PartsTool(TOOL, "Draw.", write_note, as_tool(write_note).arguments)
    replies = [call_reply(wire, True), text_reply(wire, True)]
    _, second = await ask(
        wire,
        "Draw",
        replies,
        tools=[tool],
        max_tool_result_bytes=len(PNG),
        max_tool_result_chars=120,
        prompt_cache=False,
    )
    content = tool_result_sent(wire, second)
    assert [block["type"] for block in content] == ["text", "text", "image"]  # 2nd image: out
    head, text_part, _ = content
    assert text_part["text"] == "t" * 116  # what is left of 120 after "head"
    assert head["text"].splitlines() == [
        "head",
        "[the result's text was cut at 120 characters]",
        f"[image dot.png image/png, {len(PNG)} bytes] was left out: a result's parts are "
        f"limited to {len(PNG)} bytes",
    ]


# ---------------------------------------------------------------- refusals of an input


@pytest.mark.parametrize(
    "reason", ["SAFETY", "PROHIBITED_CONTENT", "IMAGE_SAFETY", "MODEL_ARMOR", "JAILBREAK", "OTHER"]
)
async def test_gemini_blocks_an_image_prompt_as_a_refusal_with_its_category(
    reason: str, streamed: bool
) -> None:
    blocked = {
        "promptFeedback": {"blockReason": reason, "blockReasonMessage": "The input was blocked."},
        "usageMetadata": {"promptTokenCount": 260, "totalTokenCount": 260},
    }
    reply = Reply.sse([(None, blocked)]) if streamed else Reply.json(blocked)
    with ReplayServer([reply]) as server:
        model = Model("google", "m", base_url=server.url, api_key="k", stream=streamed)
        agent = await create_agent(model)
        message = await agent.run(UserMessage(QUESTION, (image(),)))
        await agent.aclose()
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
    assert (message.stop.raw, message.stop.category) == (reason, reason)
    assert message.stop.message == "The input was blocked."
    assert "inlineData" in str(server.requests[0].json)


async def test_responses_image_policy_violation_is_a_refusal_with_its_code(streamed: bool) -> None:
    failed = {
        "id": "resp_1",
        "object": "response",
        "status": "failed",
        "error": {
            "code": "image_content_policy_violation",
            "message": "The image was flagged by the usage policy.",
        },
        "output": [],
    }
    if streamed:
        reply = Reply.sse(
            [
                (
                    None,
                    {
                        "type": "response.created",
                        "response": {**failed, "status": "in_progress", "error": None},
                    },
                ),
                (None, {"type": "response.failed", "response": failed}),
            ]
        )
    else:
        reply = Reply.json(failed)
    with ReplayServer([reply]) as server:
        model = Model("openai-responses", "m", base_url=server.url, api_key="k", stream=streamed)
        agent = await create_agent(model)
        message = await agent.run(UserMessage(QUESTION, (image(),)))
        await agent.aclose()
    assert message.stop is not None and message.stop.reason is StopReason.REFUSAL
    assert message.stop.raw == "image_content_policy_violation"
    assert message.stop.category == "image_content_policy_violation"
    assert "input_image" in str(server.requests[0].json)


def test_media_rows_are_well_formed() -> None:
    for vendor in VENDORS.values():
        table = vendor.media if vendor.media is not None else PROTOCOL_MEDIA[vendor.protocol]
        for kind, rule in table.items():
            assert isinstance(rule, MediaInput)
            assert rule.url_media_types <= rule.media_types, vendor.name
            for media_type in rule.media_types:
                _part(kind, media_type, False)  # a media type of that kind, normalized
        if vendor.protocol in ("openai-chat", "ollama"):  # their tool results are text
            assert not any(rule.in_tool_results for rule in table.values()), vendor.name
        if not table:
            assert vendor.media_note, f"{vendor.name}: say why it takes no parts"


async def test_a_typed_result_from_an_image_question(wire: Wire) -> None:
    """Typed output and parts combine: the image goes with the question and the
    answer is validated into the type (native mode or the output tool per row)."""
    from pydantic import BaseModel

    class Colour(BaseModel):
        name: str

    answer = '{"name": "red"}'
    with ReplayServer([wire.reply(wire.answer([answer]))]) as server:
        model = Model(wire.vendor, "m", base_url=server.url, api_key="k")
        agent = await create_agent(model, output_type=Colour)
        message = await agent.run(UserMessage("Which colour is this dot?", (image(),)))
        await agent.aclose()
        [request] = server.requests
    CHECKS[wire.name](request.json)
    assert PNG64 in str(request.json)
    assert message.output == Colour(name="red")  # each wire's row has a native mode
