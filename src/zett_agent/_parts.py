"""Content parts: text, images, documents and audio in user messages and tool results.

A :class:`~zett_agent.UserMessage` or
:class:`~zett_agent.ToolResultMessage` keeps its ``content`` (a str: what
every reader of the conversation shows) and gains ``parts``, sent after the
content in their order:

=================  ===============================================================
:class:`TextPart`      more text, at its place among the media parts
:class:`ImagePart`     ``image/*`` (PNG, JPEG, GIF, WebP...)
:class:`DocumentPart`  a document: ``application/pdf``, ``text/plain``...
:class:`AudioPart`     ``audio/*`` (WAV, MP3...)
=================  ===============================================================

A media part holds its bytes (``data``, with ``media_type``) or a URL (``url``)
that the *provider* fetches: zett never fetches a URL itself, so a URL part for a
provider that takes only inline bytes (Ollama) is a
:class:`~zett_agent.errors.ConfigError` before sending. Which kinds, media types,
sizes and URLs each provider takes is data in its vendor row
(:class:`zett_agent.vendors.MediaInput`); the protocol modules check every part
against it before anything is sent.

Bytes are identified by their SHA-256 (``sha256``, hex) and ``size`` (bytes), set
when the part is made; two parts with the same bytes are equal whether or not the
bytes are loaded. A session store keeps bytes over :data:`BLOB_THRESHOLD` once per
session, content-addressed (:meth:`SessionStore.put_blob
<zett_agent.sessions.SessionStore.put_blob>`), and loads a session's parts
without them: such a part has ``data`` None and reads its bytes from the store
when a request is sent (:meth:`MediaPart.read`).

Reading is bounded: :meth:`MediaPart.from_file` refuses a file over ``max_bytes``
(default :data:`DEFAULT_MAX_PART_BYTES`) from its size before reading it, and
:meth:`MediaPart.from_data_url` from the length of its base64 text before
decoding it (:class:`~zett_agent.errors.PartTooLargeError`).

The bytes decide a part's media type (:func:`decide_media_type`): the label given
(a file name's type, a data URL's, a server's ``mimeType``) is a hint; a label the
bytes contradict is corrected and kept in ``labelled_as``, and bytes of no type
zett can tell under a label it could check are a ``ValueError`` where the part is
made, so they are never sent. URL parts keep their label (zett never fetches them).

Part metadata is bounded too: a media type is ``type/subtype`` (at most 127
characters, lowercased, common aliases such as ``audio/x-wav`` normalized), a
``name`` is a file name (no folders, no control characters, at most 255
characters), and a URL is ``https``/``http``/``gs`` without a user name or
password in it (credentials would be stored in the session and sent to the
provider: use a signed URL), at most 8,192 characters. A part holds no free-form
JSON, so the depth limit of stored messages has nothing to bound.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeAlias

from zett_agent.errors import ConfigError, PartTooLargeError

__all__ = [
    "BLOB_THRESHOLD",
    "DEFAULT_MAX_PART_BYTES",
    "AudioPart",
    "BlobReader",
    "DocumentPart",
    "ImagePart",
    "MediaKind",
    "MediaPart",
    "Part",
    "TextPart",
    "decide_media_type",
    "describe_parts",
    "media_class",
    "part_from_data_url",
    "part_from_dict",
    "part_from_file",
    "part_summary",
    "part_to_dict",
    "parts_from_json",
    "parts_to_json",
    "sniff_media_type",
]

DEFAULT_MAX_PART_BYTES = 20 * 1024 * 1024
"""The largest part :meth:`MediaPart.from_file` and :meth:`MediaPart.from_data_url`
read by default (20 MiB); larger ones raise :class:`PartTooLargeError` unread."""

BLOB_THRESHOLD = 16 * 1024
"""Bytes of a part above which a session store keeps them once, content-addressed,
outside the row (16 KiB); smaller parts are stored inline (base64) in their row."""

MediaKind: TypeAlias = Literal["image", "document", "audio"]

BlobReader: TypeAlias = Callable[[str], Awaitable[bytes]]
"""Reads the bytes stored under a SHA-256 (hex) for one session."""

MAX_MEDIA_TYPE = 127
MAX_NAME = 255
MAX_URL = 8192
_URL_SCHEMES = frozenset({"https", "http", "gs"})
# patterns compiled by their first use (``re`` caches them), not by ``import zett_agent``
_MEDIA_TYPE = r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$"
_CONTROL = r"[\x00-\x1f\x7f]"
_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/x-mp3": "audio/mpeg",
    "audio/x-flac": "audio/flac",
    "application/x-pdf": "application/pdf",
}


@dataclass(frozen=True)
class TextPart:
    """Text among the media parts, sent at its place."""

    text: str
    kind: ClassVar[Literal["text"]] = "text"

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class MediaPart:
    """An image, a document or audio: bytes with a media type, or a URL.

    Make one with a subclass (:class:`ImagePart`, :class:`DocumentPart`,
    :class:`AudioPart`) and ``data=`` + ``media_type=``, ``url=`` (+ ``media_type``,
    else guessed from the URL's file name), or the constructors :meth:`from_file`,
    :meth:`from_data_url`. ``name`` is a file name shown to people and sent where
    a provider takes one (OpenAI ``filename``). ``sha256`` and ``size`` are set
    from ``data``; a part loaded from a session store has them and ``data`` None
    until :meth:`loaded`. Raises ``ValueError`` for a media type of another kind,
    a malformed media type, name or URL, and for a part with neither bytes, a
    URL nor a stored hash.
    """

    media_type: str = ""
    data: bytes | None = field(default=None, repr=False, compare=False)
    url: str | None = None
    name: str | None = None
    sha256: str | None = None
    size: int | None = None
    reader: BlobReader | None = field(default=None, repr=False, compare=False)
    """Where a stored part's bytes are read from (set by the store that loaded it)."""
    labelled_as: str | None = field(default=None, compare=False)
    """The media type the part was labelled with when its bytes said another one:
    ``media_type`` is what the bytes are (corrected), this the label it replaced
    (None: the label was right, or the part is a URL). Not part of equality: the
    bytes are."""

    kind: ClassVar[MediaKind]

    def __post_init__(self) -> None:
        if type(self) is MediaPart:
            raise TypeError("make an ImagePart, DocumentPart or AudioPart")
        media_type = self.media_type or (_guess_from_url(self.url) if self.url else "")
        if self.data is not None and isinstance(self.data, bytes | bytearray | memoryview):
            label = _well_formed(media_type) if isinstance(media_type, str) and media_type else ""
            media_type, corrected = decide_media_type(label, bytes(self.data))
            if corrected is not None:
                object.__setattr__(self, "labelled_as", corrected)
        object.__setattr__(self, "media_type", _check_media_type(media_type, self.kind))
        if self.labelled_as is not None:
            label = _well_formed(str(self.labelled_as))
            object.__setattr__(self, "labelled_as", None if label == self.media_type else label)
        if self.name is not None:
            object.__setattr__(self, "name", _clean_name(self.name))
        if self.data is not None:
            if not isinstance(self.data, bytes | bytearray | memoryview):
                raise TypeError(f"data must be bytes, not {type(self.data).__name__}")
            data = bytes(self.data)
            digest = hashlib.sha256(data).hexdigest()
            if self.sha256 is not None and self.sha256 != digest:
                raise ValueError("sha256 does not match the bytes")
            object.__setattr__(self, "data", data)
            object.__setattr__(self, "sha256", digest)
            object.__setattr__(self, "size", len(data))
            if self.url is not None:
                raise ValueError("a part holds bytes or a URL, not both")
        elif self.url is not None:
            object.__setattr__(self, "url", _check_url(self.url))
        elif not (isinstance(self.sha256, str) and re.fullmatch(r"[0-9a-f]{64}", self.sha256)):
            raise ValueError(f"a {self.kind} part needs data=, url= or a stored sha256")
        elif not isinstance(self.size, int) or self.size < 0:
            raise ValueError("a stored part needs its size in bytes")

    # ------------------------------------------------------------ reading

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        media_type: str | None = None,
        *,
        name: str | None = None,
        max_bytes: int = DEFAULT_MAX_PART_BYTES,
    ) -> MediaPart:
        """The part holding the file at ``path``; its media type decided from its
        bytes (:func:`decide_media_type`), ``media_type`` (else the file name's type)
        the label they are checked against.

        Raises :class:`PartTooLargeError` for a file over ``max_bytes`` (from its
        size, before reading; a file that grows while read is cut at
        ``max_bytes + 1`` and refused too), ``OSError`` when it cannot be read,
        ``ValueError`` when its media type is unknown or not of this kind."""
        file = Path(path)
        with file.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size > max_bytes:
                raise PartTooLargeError(
                    f"{file.name} is {size} bytes, more than the limit of {max_bytes}",
                    size=size,
                    limit=max_bytes,
                )
            data = stream.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise PartTooLargeError(
                f"{file.name} is more than the limit of {max_bytes} bytes", limit=max_bytes
            )
        found = media_type or _guess_type(file.name)[0] or sniff_media_type(data)
        if found is None:
            raise ValueError(f"cannot tell the media type of {file.name}: give it")
        return cls(media_type=found, data=data, name=name or file.name)

    @classmethod
    def from_data_url(
        cls, url: str, *, name: str | None = None, max_bytes: int = DEFAULT_MAX_PART_BYTES
    ) -> MediaPart:
        """The part a ``data:<media type>;base64,<data>`` URL holds (RFC 2397).

        Raises :class:`PartTooLargeError` when the base64 text stands for more
        than ``max_bytes`` (judged from its length, before decoding), and
        ``ValueError`` for a URL that is not base64 data of this kind."""
        media_type, start = _split_data_url(url)
        size = _decoded_size(url, start)
        if size > max_bytes:
            raise PartTooLargeError(
                f"the data URL holds {size} bytes, more than the limit of {max_bytes}",
                size=size,
                limit=max_bytes,
            )
        try:
            data = base64.b64decode(url[start:], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the data URL's base64 text is not valid") from None
        return cls(media_type=media_type, data=data, name=name)

    async def read(self) -> bytes:
        """The part's bytes: ``data``, else read from the store that loaded it (the
        hash and size checked). Raises :class:`~zett_agent.errors.ConfigError`
        for a URL part (zett never fetches one) or a stored part without a store,
        :class:`~zett_agent.errors.SessionStoreError` when the store lacks them."""
        if self.data is not None:
            return self.data
        if self.url is not None:
            raise ConfigError(f"{self.describe()} is a URL; zett never fetches URLs itself")
        if self.reader is None or self.sha256 is None:
            raise ConfigError(
                f"the bytes of {self.describe()} are not loaded: the part came from a "
                "stored session without its store"
            )
        data = await self.reader(self.sha256)
        if len(data) != self.size or hashlib.sha256(data).hexdigest() != self.sha256:
            from zett_agent.errors import SessionStoreError

            raise SessionStoreError(f"the stored bytes of {self.describe()} do not match")
        return data

    async def loaded(self) -> MediaPart:
        """This part with its bytes in ``data`` (itself when they are, or for a URL)."""
        if self.data is not None or self.url is not None:
            return self
        return replace(self, data=await self.read(), reader=None)

    @property
    def needs_loading(self) -> bool:
        """Whether the bytes are in a store and not in ``data``."""
        return self.data is None and self.url is None

    # ------------------------------------------------------------ wire forms

    def base64(self) -> str:
        """The bytes as base64 text. Raises ConfigError when they are not loaded."""
        if self.data is None:
            raise ConfigError(f"the bytes of {self.describe()} are not loaded")
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """``data:<media type>;base64,<bytes>`` (RFC 2397)."""
        return f"data:{self.media_type};base64,{self.base64()}"

    def describe(self) -> str:
        """What a text-only reader is told of the part: ``[image image/png, 4033
        bytes]``, ``[document report.pdf application/pdf, 1200 bytes]``, ``[image
        image/png https://...]``."""
        named = f"{self.name} " if self.name else ""
        where = f"{self.size} bytes" if self.url is None else self.url
        separator = ", " if self.url is None else " "
        return f"[{self.kind} {named}{self.media_type}{separator}{where}]"


@dataclass(frozen=True)
class ImagePart(MediaPart):
    """An image (``image/*``)."""

    kind: ClassVar[MediaKind] = "image"


@dataclass(frozen=True)
class DocumentPart(MediaPart):
    """A document: a PDF (``application/pdf``), plain text (``text/plain``), or
    another media type that is neither an image nor audio."""

    kind: ClassVar[MediaKind] = "document"


@dataclass(frozen=True)
class AudioPart(MediaPart):
    """Audio (``audio/*``: WAV, MP3...)."""

    kind: ClassVar[MediaKind] = "audio"


Part: TypeAlias = TextPart | MediaPart
"""One content part of a user message or a tool result: a :class:`TextPart`, or a
media part (:class:`ImagePart`, :class:`DocumentPart`, :class:`AudioPart`)."""

_CLASSES: dict[str, type[MediaPart]] = {
    "image": ImagePart,
    "document": DocumentPart,
    "audio": AudioPart,
}


def media_class(media_type: str) -> type[MediaPart]:
    """The part class for ``media_type``: ImagePart for ``image/*``, AudioPart for
    ``audio/*``, DocumentPart for anything else."""
    major = media_type.split("/", 1)[0].lower()
    return ImagePart if major == "image" else AudioPart if major == "audio" else DocumentPart


def part_from_file(
    path: str | os.PathLike[str],
    media_type: str | None = None,
    *,
    name: str | None = None,
    max_bytes: int = DEFAULT_MAX_PART_BYTES,
) -> MediaPart:
    """The image, document or audio part of the file at ``path``, the class chosen
    by its media type (given, else from the file name, else its first bytes). Raises
    as :meth:`MediaPart.from_file`."""
    file = Path(path)
    label = media_type or _guess_type(file.name)[0]
    with file.open("rb") as stream:
        sniffed = sniff_media_type(stream.read(64))
    found = label or sniffed
    if found is None:
        raise ValueError(f"cannot tell the media type of {file.name}: give it")
    cls = media_class(sniffed or found)  # the bytes choose the class, as the type
    return cls.from_file(file, found, name=name, max_bytes=max_bytes)


def part_from_data_url(
    url: str, *, name: str | None = None, max_bytes: int = DEFAULT_MAX_PART_BYTES
) -> MediaPart:
    """The part a data URL holds, its class chosen by the media type; raises as
    :meth:`MediaPart.from_data_url`."""
    media_type, start = _split_data_url(url)
    head = _data_url_head(url, start)
    sniffed = sniff_media_type(head) if head is not None else None
    cls = media_class(sniffed or media_type)  # the bytes choose the class, as the type
    return cls.from_data_url(url, name=name, max_bytes=max_bytes)


def _data_url_head(url: str, start: int) -> bytes | None:
    """The first bytes of a base64 data URL (decoded from its first 88 characters),
    or None when they are not base64."""
    text = url[start : start + 88]
    text = text[: len(text) - len(text) % 4]
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"%PDF-", 0, "application/pdf"),
    (b"WAVE", 8, "audio/wav"),
    (b"ID3", 0, "audio/mpeg"),
    (b"fLaC", 0, "audio/flac"),
    (b"OggS", 0, "audio/ogg"),
)


def sniff_media_type(head: bytes) -> str | None:
    """The media type the first bytes of a file say (PNG, JPEG, GIF, WebP, PDF, WAV,
    MP3, FLAC, Ogg), or None."""
    for magic, at, media_type in _MAGIC:
        if head[at : at + len(magic)] == magic:
            return media_type
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        return "audio/mpeg"  # an MPEG audio frame without an ID3 tag
    return None


_SIGNED = frozenset({media_type for _, _, media_type in _MAGIC})
"""The media types :func:`sniff_media_type` knows by their first bytes."""


def decide_media_type(label: str, data: bytes) -> tuple[str, str | None]:
    """``(media type, the label it corrects or None)`` for bytes labelled ``label``:
    the bytes decide, the label is a hint.

    * a ``text/*`` label stands when the bytes decode as UTF-8;
    * bytes whose first bytes :func:`sniff_media_type` knows are that type (a
      different label is returned as the one corrected);
    * otherwise a label of a type with a known signature (``image/png`` over bytes
      that are no PNG), an ``application/octet-stream`` or no label is a
      ``ValueError``: an unknown binary type is never sent; any other label (a
      type without a signature zett knows: HEIC, AAC...) stands.
    """
    normal = _normal_media_type(label) if label else ""
    if normal.startswith("text/") and _is_utf8(data):
        return normal, None
    sniffed = sniff_media_type(data[:64])
    if sniffed is not None:
        return sniffed, (label if normal and normal != sniffed else None)
    if not normal or normal == "application/octet-stream":
        raise ValueError("cannot tell the media type of the bytes (no known signature): give it")
    if normal in _SIGNED or normal.startswith("text/"):
        what = "UTF-8 text" if normal.startswith("text/") else "of that type"
        raise ValueError(f"the bytes labelled {normal} are not {what}")
    return label, None


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def part_summary(part: Part) -> dict[str, Any]:
    """What a log or an event record shows of a part: its kind, media type, name, size
    and hash (or URL), never its bytes."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    out: dict[str, Any] = {"type": part.kind, "media_type": part.media_type}
    if part.labelled_as is not None:
        out["labelled_as"] = part.labelled_as
    if part.name is not None:
        out["name"] = part.name
    if part.url is not None:
        out["url"] = part.url
    else:
        out.update(size=part.size, sha256=part.sha256)
    return out


def describe_parts(parts: tuple[Part, ...] | list[Part]) -> str:
    """The parts as one text: a text part's text, a media part's description."""
    return "\n".join(part.describe() for part in parts)


# ---------------------------------------------------------------- stored form


def part_to_dict(
    part: Part, blobs: dict[str, bytes | None] | None = None, *, threshold: int = BLOB_THRESHOLD
) -> dict[str, Any]:
    """The JSON-compatible stored form of ``part``.

    Bytes go inline as base64 (``"data"``), unless ``blobs`` is given and they are
    over ``threshold``: then they are put in ``blobs`` under their SHA-256 and
    the form refers to them (``"blob"``: the hash, ``"size"``). A part loaded from
    a store without its bytes is always a reference (its hash in ``blobs`` with
    None: the store must hold it already)."""
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    out: dict[str, Any] = {"type": part.kind, "media_type": part.media_type}
    if part.labelled_as is not None:
        out["labelled_as"] = part.labelled_as
    if part.name is not None:
        out["name"] = part.name
    if part.url is not None:
        out["url"] = part.url
        return out
    assert part.sha256 is not None and part.size is not None
    if part.data is not None and (blobs is None or part.size <= threshold):
        out["data"] = base64.b64encode(part.data).decode("ascii")
        return out
    if blobs is None:
        raise ValueError(f"the bytes of {part.describe()} are not loaded")
    if part.data is not None or part.sha256 not in blobs:
        blobs[part.sha256] = part.data
    out["blob"] = part.sha256
    out["size"] = part.size
    return out


def part_from_dict(data: Mapping[str, Any], reader: BlobReader | None = None) -> Part:
    """Inverse of :func:`part_to_dict`; ``reader`` reads referred bytes (a store's).
    Raises ``ValueError`` for anything that is not a stored part."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a stored part is an object, not {type(data).__name__}")
    kind = data.get("type")
    if kind == "text":
        text = data.get("text")
        if not isinstance(text, str):
            raise ValueError("a stored text part has no text")
        return TextPart(text)
    cls = _CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown part type {kind!r}")
    media_type = data.get("media_type")
    name = data.get("name")
    if not isinstance(media_type, str) or not (name is None or isinstance(name, str)):
        raise ValueError(f"a stored {kind} part has no media type")
    label = data.get("labelled_as")
    labelled = label if isinstance(label, str) and label else None
    if isinstance(data.get("url"), str):
        return cls(media_type=media_type, url=data["url"], name=name)
    if isinstance(data.get("data"), str):
        try:
            raw = base64.b64decode(data["data"], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"a stored {kind} part's base64 is not valid") from None
        return cls(media_type=media_type, data=raw, name=name, labelled_as=labelled)
    digest, size = data.get("blob"), data.get("size")
    if not isinstance(digest, str) or not isinstance(size, int) or isinstance(size, bool):
        raise ValueError(f"a stored {kind} part has neither data, a URL nor a blob")
    return cls(
        media_type=media_type,
        name=name,
        sha256=digest,
        size=size,
        reader=reader,
        labelled_as=labelled,
    )


def parts_to_json(
    parts: tuple[Part, ...], blobs: dict[str, bytes | None] | None = None
) -> list[dict[str, Any]]:
    """Every part's :func:`part_to_dict`."""
    return [part_to_dict(part, blobs) for part in parts]


def parts_from_json(data: Any, reader: BlobReader | None = None) -> tuple[Part, ...]:
    """Every part of a stored list (:func:`part_from_dict`); ValueError for others."""
    if not isinstance(data, list):
        raise ValueError("stored parts are a list")
    return tuple(part_from_dict(item, reader) for item in data)


# ---------------------------------------------------------------- checks


def _normal_media_type(value: str) -> str:
    """``value`` lowercased, without parameters, common aliases normalized."""
    media_type = value.split(";", 1)[0].strip().lower()
    return _ALIASES.get(media_type, media_type)


def _well_formed(value: str) -> str:
    """``value`` normalized (:func:`_normal_media_type`); ValueError unless it is a
    bounded ``type/subtype``."""
    media_type = _normal_media_type(value)
    if len(media_type) > MAX_MEDIA_TYPE or not re.match(_MEDIA_TYPE, media_type):
        raise ValueError(f"not a media type (type/subtype): {value[:80]!r}")
    return media_type


def _check_media_type(value: Any, kind: MediaKind) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"a {kind} part needs a media type (type/subtype)")
    media_type = _well_formed(value)
    if media_class(media_type).kind != kind:
        raise ValueError(f"{media_type} is not a media type of a {kind} part")
    return media_type


def _clean_name(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("a part's name is a str")
    name = re.sub(_CONTROL, "", value.replace("\\", "/").rsplit("/", 1)[-1]).strip()
    return name[:MAX_NAME] or "file"


def _check_url(value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_URL:
        raise ValueError(f"a part's URL is a str of at most {MAX_URL} characters")
    if value.startswith("data:"):
        raise ValueError("a data URL holds bytes: use from_data_url()")
    parsed = urllib.parse.urlsplit(value)
    if parsed.scheme.lower() not in _URL_SCHEMES or not parsed.netloc:
        raise ValueError(f"a part's URL must be https, http or gs, not {value[:80]!r}")
    if parsed.username is not None or parsed.password is not None:
        raise ValueError(
            "a part's URL must not hold a user name or password (it would be stored in "
            "the session and sent to the provider); use a signed URL"
        )
    if re.search(_CONTROL, value):
        raise ValueError("a part's URL holds control characters")
    return value


def _guess_from_url(url: str | None) -> str:
    if not isinstance(url, str):
        return ""
    path = urllib.parse.urlsplit(url).path
    return _guess_type(path)[0] or ""


def _split_data_url(url: str) -> tuple[str, int]:
    """The media type of a base64 data URL and where its data starts (nothing of the
    data is copied)."""
    if not isinstance(url, str) or not url.startswith("data:"):
        raise ValueError("not a data URL")
    head, comma, _ = url[5 : 5 + 512].partition(",")
    if not comma:
        raise ValueError("a data URL needs a comma before its data")
    fields = [f.strip() for f in head.split(";")]
    if "base64" not in (f.lower() for f in fields[1:]):
        raise ValueError("only base64 data URLs are taken")
    return fields[0] or "application/octet-stream", 5 + len(head) + 1


def _decoded_size(text: str, start: int) -> int:
    """Bytes the base64 text from ``start`` stands for, from its length alone."""
    padding = 2 if text.endswith("==") else 1 if text.endswith("=") else 0
    return max(0, len(text) - start - padding) * 3 // 4


def _guess_type(name: str | os.PathLike[str]) -> tuple[str | None, str | None]:
    """``mimetypes.guess_type`` (imported when a file is first named: not by
    ``import zett_agent``)."""
    import mimetypes

    return mimetypes.guess_type(name)
