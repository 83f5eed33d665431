"""Content parts on their own: how they are made, bounded, described and stored.

Reading is bounded before the bytes are read (a sparse 1 GiB file, a data URL
standing for 40 MiB: refused with little memory used); metadata is checked where a
part is made; the stored form round-trips, inline or as a reference to a blob.
"""

from __future__ import annotations

import base64
import contextlib
import os
import threading
import tracemalloc
from pathlib import Path

import pytest

from zett_agent import (
    AudioPart,
    DocumentPart,
    ImagePart,
    PartTooLargeError,
    TextPart,
    ToolResultMessage,
    UserMessage,
    part_from_file,
)
from zett_agent._messages import message_from_dict, message_to_dict
from zett_agent._parts import (
    BLOB_THRESHOLD,
    part_from_data_url,
    part_from_dict,
    part_to_dict,
    sniff_media_type,
)
from zett_agent.errors import ConfigError

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.4\n" + b"x" * 100
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 40


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "huge.png"
    with big.open("wb") as f:
        f.truncate(1024**3)  # sparse: 1 GiB that reading whole would hold in memory
    tracemalloc.start()
    try:
        with pytest.raises(PartTooLargeError) as caught:
            ImagePart.from_file(big, max_bytes=1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.size == 1024**3 and caught.value.limit == 1024 * 1024
    assert "huge.png is 1073741824 bytes, more than the limit of 1048576" in str(caught.value)
    assert peak < 256 * 1024  # nothing of the file was read
    assert isinstance(caught.value, ValueError)  # callers that catch ValueError see it


def test_a_file_that_grows_past_the_limit_while_read_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # its size says 0; what comes through it is counted as it is read

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as w:
            w.write(b"\x89PNG\r\n\x1a\n" + b"x" * 5000)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(PartTooLargeError, match="more than the limit of 1000 bytes"):
            ImagePart.from_file(fifo, "image/png", max_bytes=1000)
    finally:
        writer.join(5)


def test_a_data_url_is_judged_by_its_length_before_decoding() -> None:
    text = "data:image/png;base64," + "A" * (40 * 1024 * 1024 // 3 * 4)  # 40 MiB of bytes
    tracemalloc.start()
    try:
        with pytest.raises(PartTooLargeError) as caught:
            part_from_data_url(text, max_bytes=10 * 1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.size == 40 * 1024 * 1024 // 3 * 3
    assert peak < 1024 * 1024  # never decoded (that would take 40 MiB)


def test_from_file_takes_the_media_type_from_the_name_then_the_bytes(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(PNG)
    (tmp_path / "scan").write_bytes(PDF)  # no extension: the first bytes say PDF
    (tmp_path / "voice.wav").write_bytes(WAV)
    (tmp_path / "blob").write_bytes(b"no idea")
    image = part_from_file(tmp_path / "cat.png")
    assert isinstance(image, ImagePart) and image.media_type == "image/png"
    assert image.name == "cat.png" and image.size == len(PNG) and image.data == PNG
    document = part_from_file(tmp_path / "scan")
    assert isinstance(document, DocumentPart) and document.media_type == "application/pdf"
    audio = part_from_file(tmp_path / "voice.wav")
    assert isinstance(audio, AudioPart) and audio.media_type == "audio/wav"  # x-wav normalized
    with pytest.raises(ValueError, match="cannot tell the media type of blob"):
        part_from_file(tmp_path / "blob")
    with pytest.raises(ValueError, match="not a media type of a image part"):
        ImagePart.from_file(tmp_path / "scan", "application/pdf")
    with pytest.raises(FileNotFoundError):
        part_from_file(tmp_path / "missing.png")


@pytest.mark.parametrize(
    ("head", "media_type"),
    [
        (PNG[:16], "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (PDF[:16], "application/pdf"),
        (WAV[:16], "audio/wav"),
        (b"ID3\x04\x00\x00\x00", "audio/mpeg"),
        (b"\xff\xfb\x90\x00", "audio/mpeg"),
        (b"fLaC\x00\x00", "audio/flac"),
        (b"OggS\x00\x02", "audio/ogg"),
        (b"hello", None),
    ],
)
def test_sniffing_reads_the_magic_numbers(head: bytes, media_type: str | None) -> None:
    assert sniff_media_type(head) == media_type


def test_metadata_is_bounded_where_a_part_is_made() -> None:
    named = ImagePart(
        media_type="Image/JPG; q=1", url="https://example.com/a", name="../../etc/\x07passwd.png"
    )
    assert named.media_type == "image/jpeg"  # lowercased, parameters and an alias dropped
    assert named.name == "passwd.png"  # no folders, no control characters
    assert ImagePart(media_type="image/png", data=PNG, name="x" * 400).name == "x" * 255
    with pytest.raises(ValueError, match="user name or password"):
        ImagePart(media_type="image/png", url="https://user:secret@example.com/a.png")
    with pytest.raises(ValueError, match="https, http or gs"):
        ImagePart(media_type="image/png", url="file:///etc/passwd")
    with pytest.raises(ValueError, match="use from_data_url"):
        ImagePart(media_type="image/png", url="data:image/png;base64,AAAA")
    with pytest.raises(ValueError, match="not a media type"):
        ImagePart(media_type="image/<script>", data=PNG)
    with pytest.raises(ValueError, match="bytes or a URL, not both"):
        ImagePart(media_type="image/png", data=PNG, url="https://example.com/a.png")
    with pytest.raises(ValueError, match="needs data=, url= or a stored sha256"):
        ImagePart(media_type="image/png")
    with pytest.raises(TypeError):
        ImagePart(media_type="image/png", data="not bytes")  # type: ignore[arg-type]
    guessed = ImagePart(url="https://example.com/photos/cat.webp?sig=abc")
    assert guessed.media_type == "image/webp"  # from the URL's file name


def test_descriptions_say_kind_name_type_and_size() -> None:
    assert ImagePart(media_type="image/png", data=PNG).describe() == (
        f"[image image/png, {len(PNG)} bytes]"
    )
    assert DocumentPart(media_type="application/pdf", data=PDF, name="r.pdf").describe() == (
        f"[document r.pdf application/pdf, {len(PDF)} bytes]"
    )
    url = ImagePart(media_type="image/png", url="https://example.com/a.png")
    assert url.describe() == "[image image/png https://example.com/a.png]"
    assert TextPart("hi").describe() == "hi"


def test_parts_keep_code_written_for_text_working() -> None:
    plain = UserMessage("hello")
    assert plain.parts == () and plain.content == "hello"
    assert message_to_dict(plain) == {"role": "user", "content": "hello"}  # no parts key
    result = ToolResultMessage("c1", "t", "text", True)
    assert message_to_dict(result) == {
        "role": "tool",
        "tool_call_id": "c1",
        "name": "t",
        "content": "text",
        "is_error": True,
    }
    listed = UserMessage("look", parts=[ImagePart(media_type="image/png", data=PNG)])  # type: ignore[arg-type]
    assert isinstance(listed.parts, tuple)


def test_stored_form_round_trips_inline_and_by_reference() -> None:
    small = ImagePart(media_type="image/png", data=PNG[:100])
    large = DocumentPart(media_type="application/pdf", data=b"%PDF-" + b"y" * BLOB_THRESHOLD)
    url = AudioPart(media_type="audio/mpeg", url="https://example.com/a.mp3", name="a.mp3")
    message = UserMessage("q", (small, TextPart("and"), large, url))
    inline = message_to_dict(message)
    assert [p.get("data") is not None for p in inline["parts"]] == [True, False, True, False]
    assert message_from_dict(inline) == message
    blobs: dict[str, bytes | None] = {}
    stored = message_to_dict(message, blobs)
    assert stored["parts"][0]["data"] == base64.b64encode(PNG[:100]).decode()  # small: inline
    assert stored["parts"][2] == {
        "type": "document",
        "media_type": "application/pdf",
        "blob": large.sha256,
        "size": large.size,
    }
    assert blobs == {large.sha256: large.data}
    loaded = message_from_dict(stored)
    assert loaded == message  # equal by hash and size, bytes loaded or not
    lazy = loaded.parts[2]
    assert isinstance(lazy, DocumentPart) and lazy.needs_loading and lazy.data is None
    with pytest.raises(ValueError, match="not loaded"):
        part_to_dict(lazy)  # no store to refer to, no bytes to inline


async def test_a_stored_part_reads_its_bytes_from_its_reader_and_checks_them() -> None:
    part = ImagePart(media_type="image/png", data=PNG)
    calls: list[str] = []

    async def reader(sha256: str) -> bytes:
        calls.append(sha256)
        return PNG

    lazy = part_from_dict(part_to_dict(part, {}, threshold=0), reader)
    assert isinstance(lazy, ImagePart) and lazy.needs_loading
    assert await lazy.read() == PNG and calls == [part.sha256]
    loaded = await lazy.loaded()
    assert loaded.data == PNG and not loaded.needs_loading and loaded == part

    async def wrong(sha256: str) -> bytes:
        return PNG + b"!"

    from zett_agent.errors import SessionStoreError

    with pytest.raises(SessionStoreError, match="do not match"):
        await part_from_dict(part_to_dict(part, {}, threshold=0), wrong).read()
    with pytest.raises(ConfigError, match="without its store"):
        await part_from_dict(part_to_dict(part, {}, threshold=0)).read()
    with pytest.raises(ConfigError, match="never fetches"):
        await ImagePart(media_type="image/png", url="https://example.com/a.png").read()


@pytest.mark.parametrize(
    "stored",
    [
        {"type": "video", "media_type": "video/mp4", "data": ""},
        {"type": "image", "data": "AAAA"},
        {"type": "image", "media_type": "image/png", "data": "!!!"},
        {"type": "image", "media_type": "image/png"},
        {"type": "image", "media_type": "image/png", "blob": "abc", "size": 3},
        {"type": "text"},
        "not an object",
    ],
)
def test_a_malformed_stored_part_is_a_value_error(stored: object) -> None:
    with pytest.raises(ValueError, match=r"part|base64|object|media type"):
        part_from_dict(stored)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid parts"):
        message_from_dict({"role": "user", "content": "x", "parts": [stored]})
