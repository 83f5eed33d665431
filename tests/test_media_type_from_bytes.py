"""The media type of every part is decided from its bytes: a label (a file name, a
``data:`` URL's type, an MCP server's ``mimeType``, a serve file part's
``mediaType``) is a hint. A label the bytes contradict is corrected, and the part
says so (``labelled_as``); bytes of no type zett can tell under a label of a type
with a known signature (or ``application/octet-stream``) are refused before
anything is sent; ``text/*`` stands when the bytes are UTF-8; URL parts keep their
label (zett never fetches them)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from zett_agent import Model, UserMessage, create_agent
from zett_agent._parts import (
    AudioPart,
    DocumentPart,
    ImagePart,
    part_from_data_url,
    part_from_dict,
    part_from_file,
    part_summary,
    part_to_dict,
)
from zett_agent.testing import ReplayServer, Reply

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(range(200))
PDF = b"%PDF-1.7\n" + b"%" * 100
JPEG_AS_PNG = "data:image/png;base64," + base64.b64encode(JPEG).decode()


def anthropic_reply() -> Reply:
    return Reply.json(
        {
            "type": "message",
            "model": "claude",
            "content": [{"type": "text", "text": "a photo"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 30, "output_tokens": 5},
        }
    )


def test_a_file_named_png_holding_jpeg_is_jpeg(tmp_path: Path) -> None:
    (tmp_path / "photo.png").write_bytes(JPEG)
    for part in (
        part_from_file(tmp_path / "photo.png"),
        ImagePart.from_file(tmp_path / "photo.png"),
    ):
        assert isinstance(part, ImagePart)
        assert part.media_type == "image/jpeg"
        assert part.labelled_as == "image/png"
        assert part_summary(part)["labelled_as"] == "image/png"


def test_a_pdf_named_png_is_a_document(tmp_path: Path) -> None:
    (tmp_path / "scan.png").write_bytes(PDF)
    part = part_from_file(tmp_path / "scan.png")
    assert isinstance(part, DocumentPart)
    assert (part.media_type, part.labelled_as) == ("application/pdf", "image/png")


def test_a_data_url_labelled_png_holding_jpeg_is_jpeg() -> None:
    for part in (part_from_data_url(JPEG_AS_PNG), ImagePart.from_data_url(JPEG_AS_PNG)):
        assert (part.media_type, part.labelled_as) == ("image/jpeg", "image/png")


def test_a_right_label_is_not_recorded() -> None:
    part = ImagePart(media_type="image/jpg", data=JPEG)  # an alias of the same type
    assert part.media_type == "image/jpeg" and part.labelled_as is None
    assert "labelled_as" not in part_to_dict(part)


def test_the_correction_is_stored_with_the_part() -> None:
    part = ImagePart(media_type="image/png", data=JPEG)
    stored = part_to_dict(part)
    assert stored["media_type"] == "image/jpeg" and stored["labelled_as"] == "image/png"
    again = part_from_dict(stored)
    assert isinstance(again, ImagePart) and again.labelled_as == "image/png"
    referred = part_to_dict(part, {}, threshold=0)
    assert part_from_dict(referred).labelled_as == "image/png"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("cls", "label", "data", "words"),
    [
        (ImagePart, "image/png", b"no image at all" * 4, "not of that type"),
        (AudioPart, "audio/wav", b"\x00\x01\x02" * 30, "not of that type"),
        (DocumentPart, "application/pdf", b"PK\x03\x04 a zip", "not of that type"),
        (DocumentPart, "application/octet-stream", b"\x00\x01\x02", "cannot tell"),
        (DocumentPart, "text/plain", b"caf\xe9 in latin-1", "not UTF-8 text"),
        (ImagePart, "image/png", PDF, "application/pdf is not a media type of a image"),
    ],
)
def test_bytes_that_are_not_what_they_say_are_refused(
    cls: type[ImagePart], label: str, data: bytes, words: str
) -> None:
    with pytest.raises(ValueError, match=words):
        cls(media_type=label, data=data)


def test_labels_zett_cannot_check_stand() -> None:
    assert DocumentPart(media_type="text/csv", data=b"a,b\n1,2\n").media_type == "text/csv"
    heic = ImagePart(media_type="image/heic", data=b"\x00\x00\x00\x18ftypheic")
    assert heic.media_type == "image/heic" and heic.labelled_as is None
    url = ImagePart(media_type="image/png", url="https://example.com/photo.jpg")
    assert url.media_type == "image/png"  # never fetched: the label stands


def test_an_mcp_image_labelled_png_holding_jpeg_is_jpeg() -> None:
    mcp_types = pytest.importorskip("mcp_types", reason="the 'mcp' extra is not installed")
    from zett_agent.mcp._convert import result_parts

    result = mcp_types.CallToolResult(
        content=[
            mcp_types.ImageContent(
                type="image", data=base64.b64encode(JPEG).decode(), mime_type="image/png"
            ),
            mcp_types.ImageContent(
                type="image", data=base64.b64encode(b"garbage" * 9).decode(), mime_type="image/png"
            ),
        ]
    )
    [part] = result_parts(result)  # the unknown bytes are left to the text's description
    assert (part.media_type, part.labelled_as) == ("image/jpeg", "image/png")


def test_a_serve_file_part_labelled_png_holding_jpeg_is_jpeg() -> None:
    pytest.importorskip("starlette", reason="the 'serve' extra is not installed")
    from zett_agent.serve._attachments import file_parts as parse
    from zett_agent.serve._request import FilePartIn, RequestError

    def file_parts(parts: list[dict[str, str]], *rest: Any) -> Any:
        return parse([FilePartIn.model_validate(p) for p in parts], *rest)

    ui = [{"type": "file", "url": JPEG_AS_PNG, "mediaType": "image/png", "filename": "a.png"}]
    [part] = file_parts(ui, "s1", [], 1 << 20)
    assert (part.media_type, part.labelled_as) == ("image/jpeg", "image/png")
    pdf = "data:image/png;base64," + base64.b64encode(PDF).decode()
    [document] = file_parts(
        [{"type": "file", "url": pdf, "mediaType": "image/png"}], "s1", [], 1 << 20
    )
    assert isinstance(document, DocumentPart) and document.labelled_as == "image/png"
    bad = "data:image/png;base64," + base64.b64encode(b"garbage" * 9).decode()
    with pytest.raises(RequestError, match="not of that type"):
        file_parts([{"type": "file", "url": bad, "mediaType": "image/png"}], "s1", [], 1 << 20)


async def test_what_is_sent_is_the_bytes_type(tmp_path: Path) -> None:
    (tmp_path / "photo.png").write_bytes(JPEG)
    part = part_from_file(tmp_path / "photo.png")
    with ReplayServer([anthropic_reply()]) as server:
        model = Model("anthropic", "claude", base_url=server.url, api_key="k")
        agent = await create_agent(model)
        try:
            await agent.run(UserMessage("what is it?", (part,)))
        finally:
            await agent.aclose()
    [image] = [b for b in server.requests[0].json["messages"][0]["content"] if b["type"] == "image"]
    assert image["source"]["media_type"] == "image/jpeg"
