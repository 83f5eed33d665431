"""Files in ``zett serve``: the AI SDK's file parts in, stored parts out.

``useChat`` sends a file the user attached as a part of the user message,
``{"type": "file", "mediaType", "filename"?, "url"}``, its ``url`` a ``data:`` URL of
the bytes (the SDK's ``convertFileListToFileUIParts``). Rules:

* **New parts come from the last message only** (the user message this turn asks):
  its file parts become :mod:`zett_agent._parts` parts of the stored
  :class:`~zett_agent.UserMessage`. The stock transport re-sends every
  earlier message with each turn, data URLs included: those are read as part of
  the body and ignored, because **the stored parts win** (the session store is the
  source of truth, as for text).
* **Limits**: the file parts of one message may hold at most
  ``max_attachment_bytes`` (:data:`DEFAULT_MAX_ATTACHMENT_BYTES`, 10 MiB) of bytes,
  judged from the base64 text's length before anything is decoded (413 past it);
  a chat request's body may be ``max_chat_body_bytes``
  (:data:`DEFAULT_MAX_CHAT_BODY_BYTES`, 32 MiB) long, so that the stock transport
  can re-send a few earlier attachments; every other endpoint keeps the 2 MiB body
  limit. A front end that sends only the last message (this page, or the SDK's
  ``prepareSendMessagesRequest``) never meets the chat limit.
* A file part's ``url`` must be a ``data:`` URL, an ``https:`` URL (sent to a
  provider that fetches URLs itself; zett never fetches one), or the URL this
  server gave a stored part of the same session (a regenerated turn of a restored
  chat: the stored part is taken). Anything else is a 400.
* **Out**: a restored session's parts are file parts whose ``url`` is
  ``/api/sessions/{id}/parts/{sha256}`` (small, so a re-sent history stays small);
  :func:`part_response` serves the bytes with their media type, sandboxed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.responses import Response

from zett_agent._messages import ToolResultMessage, UserMessage
from zett_agent._parts import MediaPart, Part, TextPart, media_class, part_from_data_url
from zett_agent._records import SessionEntry
from zett_agent.errors import PartTooLargeError

if TYPE_CHECKING:
    from ._request import FilePartIn

__all__ = [
    "DEFAULT_MAX_ATTACHMENT_BYTES",
    "DEFAULT_MAX_CHAT_BODY_BYTES",
    "file_parts",
    "part_response",
    "part_url",
    "stored_part",
    "ui_parts",
]

DEFAULT_MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
"""Bytes the file parts of one user message may hold together (10 MiB)."""

DEFAULT_MAX_CHAT_BODY_BYTES = 32 * 1024 * 1024
"""The largest ``POST /api/chat`` body (32 MiB: the new attachments, and earlier
ones a stock transport re-sends, which are ignored)."""

_STORED = re.compile(r"^/api/sessions/(?P<session>[^/]+)/parts/(?P<sha>[0-9a-f]{64})$")


def part_url(session_id: str, part: MediaPart) -> str:
    """The URL a stored part is served at (its own URL for a URL part)."""
    if part.url is not None:
        return part.url
    return f"/api/sessions/{session_id}/parts/{part.sha256}"


def file_parts(
    parts: Sequence[FilePartIn],
    session_id: str,
    stored: Sequence[SessionEntry],
    max_bytes: int,
) -> tuple[MediaPart, ...]:
    """The media parts of a UI message's ``file`` parts (parsed by
    :func:`~._request.new_input`), for ``session_id`` whose rows hold ``stored``. Raises
    :class:`~zett_agent.serve._request.RequestError`: 413 past ``max_bytes`` in
    all (judged before decoding), 400 for a file part that is not a data URL, an
    ``https`` URL or one of this session's stored parts, or whose media type is
    not one of a part."""
    from ._request import RequestError

    out: list[MediaPart] = []
    left = max_bytes
    for part in parts:
        url, media_type, name = part.url, part.mediaType, part.filename
        try:
            cls = media_class(media_type)
            if url.startswith("data:"):  # the bytes choose the class and the type
                made = part_from_data_url(url, name=name, max_bytes=left)
            elif (found := _STORED.match(url)) is not None:
                if found["session"] != session_id:
                    raise ValueError("it names another session's part")
                made = _find(stored, found["sha"])
            else:
                made = cls(media_type=media_type, url=url, name=name)
        except PartTooLargeError as error:
            raise RequestError(
                f"the attachments are larger than {max_bytes} bytes in all ({error})", 413
            ) from None
        except ValueError as error:
            raise RequestError(f"file part {name or media_type!r}: {error}") from None
        left -= made.size or 0
        if left < 0:
            raise RequestError(f"the attachments are larger than {max_bytes} bytes in all", 413)
        out.append(made)
    return tuple(out)


def _find(stored: Sequence[SessionEntry], sha256: str) -> MediaPart:
    found = stored_part(stored, sha256)
    if found is None:
        raise ValueError("no part of this session has those bytes")
    return found


def stored_part(stored: Sequence[SessionEntry], sha256: str) -> MediaPart | None:
    """The part of ``stored`` (a session's rows' messages) whose bytes hash to
    ``sha256``, or None."""
    for entry in stored:
        if isinstance(entry, UserMessage | ToolResultMessage):
            for part in entry.parts:
                if isinstance(part, MediaPart) and part.sha256 == sha256:
                    return part
    return None


def ui_parts(session_id: str, parts: Sequence[Part]) -> list[dict[str, Any]]:
    """Stored parts as UI message parts: text parts as ``text``, media parts as
    ``file`` parts served by this server (:func:`part_url`)."""
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            out.append({"type": "text", "text": part.text, "state": "done"})
            continue
        file: dict[str, Any] = {
            "type": "file",
            "mediaType": part.media_type,
            "url": part_url(session_id, part),
        }
        if part.name:
            file["filename"] = part.name
        out.append(file)
    return out


PART_HEADERS = {
    # the bytes are the user's or a tool's: shown, never run, never sniffed
    "content-security-policy": "sandbox; default-src 'none'",
    "x-content-type-options": "nosniff",
    "cache-control": "private, max-age=86400, immutable",
}


async def part_response(part: MediaPart) -> Response:
    """The part's bytes with its media type (its stored bytes are read now)."""
    data = await part.read()
    headers = dict(PART_HEADERS)
    if part.name:
        headers["content-disposition"] = f"inline; filename*=UTF-8''{quote(part.name)}"
    return Response(data, media_type=part.media_type, headers=headers)
