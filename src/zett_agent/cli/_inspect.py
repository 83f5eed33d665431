"""``zett inspect``: what zett-agent makes of a captured response body, offline.

The body goes through the vendor's protocol decoder sans-IO, exactly as the HTTP
layer feeds it: SSE events (parsed with httpx-sse) to ``feed_sse``, NDJSON lines
to ``feed_line``, a whole JSON body to ``decode_body``, a non-2xx status to
``decode_error``; streams end with ``finish()``. The exit status is the one
``zett run`` would give for the stop found (:data:`~zett_agent.cli.EXIT_CODES`);
an error body exits 1 (5 for a prompt too long for the context window).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from zett_agent.cli._main import EXIT_CODES, app, err_console, out_console

if TYPE_CHECKING:
    from zett_agent._exchange import ModelResponse
    from zett_agent.errors import ZettError
    from zett_agent.vendors import Vendor

__all__ = [
    "PROTOCOL_CHOICES",
    "BodyFormat",
    "decode_captured",
    "detect_format",
    "error_record",
    "guess_protocol",
    "response_record",
]

BodyFormat = Literal["sse", "ndjson", "json"]

PROTOCOL_CHOICES: Mapping[str, str] = {
    "responses": "openai-responses",
    "chat": "openai-chat",
    "messages": "anthropic",
    "gemini": "gemini",
    "ollama": "ollama",
    "openai-responses": "openai-responses",
    "openai-chat": "openai-chat",
    "anthropic": "anthropic",
}
"""``--protocol`` value -> wire protocol name (short names and the full ones)."""

_WITHHELD = frozenset({"refusal", "interrupted"})
_MESSAGE_LIMIT = 300  # characters of an error message shown for a body that is no response

# Keys only one wire protocol's bodies hold (checked in this order).
_WIRE_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai-responses", ('"response.', '"object":"response"', '"object": "response"')),
    ("anthropic", ('"message_start"', '"content_block', '"stop_reason"')),
    ("gemini", ('"candidates"', '"promptFeedback"', '"finishReason"')),
    ("openai-chat", ('"choices"', '"chat.completion')),
    ("ollama", ('"done_reason"', '"done":')),
)


def detect_format(data: bytes, stream: bool | None = None) -> BodyFormat:
    """How to read ``data``: SSE when lines start with ``data:``/``event:``, NDJSON
    when it is several JSON lines, else one JSON body.

    ``stream`` True rules out ``"json"``, False forces it.
    """
    if stream is False:
        return "json"
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    if any(line.startswith(("data:", "event:")) for line in lines):
        return "sse"
    if stream:
        return "ndjson" if any(_is_json_object(line) for line in lines) else "sse"
    if len(lines) > 1 and all(_is_json_object(line) for line in lines):
        return "ndjson"
    return "json"


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def guess_protocol(data: bytes) -> str | None:
    """The wire protocol whose own keys ``data`` holds (``"gemini"`` for a body with
    ``"candidates"``...), or None when it holds none of them."""
    text = data[:200_000].decode("utf-8", "replace")
    for name, markers in _WIRE_MARKERS:
        if any(marker in text for marker in markers):
            return name
    return None


def looks_binary(data: bytes) -> bool:
    """Whether ``data`` is no text body at all (NUL bytes or not UTF-8)."""
    head = data[:4096]
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start < len(head) - 4  # a cut multi-byte character at the end is fine
    return False


def decode_captured(
    vendor: Vendor,
    data: bytes,
    *,
    protocol: str | None = None,
    status: int = 200,
    body_format: BodyFormat = "json",
    max_tokens: int | None = None,
) -> ModelResponse:
    """Decode a captured body as the vendor's protocol (or ``protocol``) would.

    ``max_tokens``: the output limit the request asked for, judged as the agent
    loop does (:func:`~zett_agent.protocols._builder.apply_output_limit`).

    Raises :class:`~zett_agent.errors.ProviderError` for an error body,
    :class:`~zett_agent.errors.DecodeError` for a body that cannot be read, and
    :class:`~zett_agent.errors.ConfigError` for an unknown protocol.
    """
    import httpx
    from httpx_sse import EventSource, SSEError

    from zett_agent.errors import DecodeError
    from zett_agent.protocols import get_protocol
    from zett_agent.protocols._builder import apply_output_limit

    decoder = get_protocol(protocol or vendor.protocol).decoder(vendor)
    try:
        if not 200 <= status < 300:
            return decoder.decode_error(status, {}, data)
        if body_format == "json":
            return apply_output_limit(decoder.decode_body(data), max_tokens)
        if body_format == "sse":
            response = httpx.Response(
                200, content=data, headers={"content-type": "text/event-stream"}
            )
            try:
                for sse in EventSource(response).iter_sse():
                    decoder.feed_sse(sse.event, sse.data)
            except SSEError as error:
                raise DecodeError(f"not a server-sent event stream: {error}") from error
        else:
            for line in data.decode("utf-8", "replace").splitlines():
                if line.strip():
                    decoder.feed_line(line)
        return apply_output_limit(decoder.finish(), max_tokens)
    except NotImplementedError as error:
        raise DecodeError(f"{error}; try --stream/--no-stream or --protocol") from error


def response_record(response: ModelResponse) -> dict[str, Any]:
    """The ``zett inspect --json`` object for a decoded response.

    ``reason`` is the StopReason value also for a normal end. For a REFUSAL or
    INTERRUPTED response ``tool_calls`` is empty and ``withheld_tool_calls``
    names the calls that came with it. ``cut_tool_calls`` names the calls the wire
    did not finish (never run; each ``tool_calls`` entry says ``closed``).
    """
    from zett_agent._exchange import CUT_TOOL_CALLS, names_in

    info = response.stop_info
    calls = response.tool_calls
    withheld: list[str] = []
    if info.reason.value in _WITHHELD:
        withheld = [c.name for c in calls]
        if not withheld:
            withheld = names_in(info.detail, "withheld_tool_calls")
        calls = ()
    return {
        **info.to_dict(),
        "detail": _jsonable(dict(info.detail)),
        "text": response.text,
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "closed": c.closed}
            for c in calls
        ],
        "withheld_tool_calls": withheld,
        "cut_tool_calls": names_in(info.detail, CUT_TOOL_CALLS),
    }


def error_record(error: ZettError) -> dict[str, Any]:
    """A JSON-compatible description of a typed error (``zett inspect --json``)."""
    from zett_agent.errors import ProviderError

    record: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, ProviderError):
        record.update(
            provider=error.provider,
            status=error.status,
            error_type=error.error_type,
            code=error.code,
            provider_message=error.message,
            retryable=error.retryable,
            retry_after=error.retry_after,
        )
    return {"error": _jsonable(record)}


def _jsonable(value: Any) -> Any:
    """``value`` as strict JSON, nested at most ``MAX_JSON_DEPTH`` levels (a detail or
    error body the provider nested deeper keeps a marker there, as a stored message
    does), so printing it can never hit Python's recursion limit."""
    from zett_agent._messages import storable_json

    result: Any = json.loads(json.dumps(storable_json(value), default=str))
    return result


def _short(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "…"


# ---------------------------------------------------------------- the command


@app.command()
def inspect(
    file: Annotated[
        Path, typer.Argument(help="Captured response body; - reads stdin.", allow_dash=True)
    ],
    provider: Annotated[str, typer.Option(help="Provider that sent it (see zett providers).")],
    protocol: Annotated[
        str | None,
        typer.Option(
            help="Wire protocol, when not the provider's: "
            + ", ".join(p for p in PROTOCOL_CHOICES if "-" not in p and p != "anthropic")
        ),
    ] = None,
    status: Annotated[
        int, typer.Option(min=100, max=599, help="HTTP status the body came with.")
    ] = 200,
    stream: Annotated[
        bool | None,
        typer.Option(
            "--stream/--no-stream",
            help="Read as a stream (SSE/NDJSON) or one JSON body; default: detect.",
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    max_tokens: Annotated[
        int | None, typer.Option(help="The output limit the request asked for (as the loop).")
    ] = None,
) -> None:
    """Show what zett-agent makes of a captured response body (JSON, SSE or NDJSON).

    Prints why it stopped, the text, the tool calls, and the tool calls withheld
    because the response was a refusal or was interrupted. Exits with the status
    zett run would give for that stop (0 normal, 3 refusal, 4 max_output, 5
    context_full, 6 interrupted, 8 other); 1 when the body is an error (the typed
    error is printed) or cannot be read.
    """
    from zett_agent.cli._output import exit_code_for
    from zett_agent.errors import ConfigError, ContextOverflowError, DecodeError, ZettError
    from zett_agent.vendors import get_vendor

    try:
        vendor = get_vendor(provider)
    except ConfigError as error:
        raise typer.BadParameter(str(error), param_hint="--provider") from None
    if protocol is not None and protocol not in PROTOCOL_CHOICES:
        raise typer.BadParameter(
            f"must be one of {', '.join(PROTOCOL_CHOICES)}", param_hint="--protocol"
        )
    try:
        data = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
    except OSError as error:  # typer prints it: the file name shown escaped
        from zett_agent._terminal_text import one_line

        raise typer.BadParameter(one_line(str(error)), param_hint="FILE") from None
    wire = PROTOCOL_CHOICES[protocol] if protocol else vendor.protocol
    if looks_binary(data):
        binary = DecodeError(
            f"{file} is not a text response body ({len(data)} bytes of binary data)"
        )
        _show_error(binary, json_output)
        raise typer.Exit(EXIT_CODES["error"])
    guessed = guess_protocol(data)
    if guessed is not None and guessed != wire and not json_output:
        short = next(k for k, v in PROTOCOL_CHOICES.items() if v == guessed)
        err_console().print(
            f"hint: this body looks like the {guessed} wire, not {wire}; "
            f"try --protocol {short} or another --provider",
            style="yellow",
            highlight=False,
            soft_wrap=True,
        )
    body_format = detect_format(data, stream)
    try:
        response = decode_captured(
            vendor, data, protocol=wire, status=status, body_format=body_format,
            max_tokens=max_tokens,
        )  # fmt: skip
    except ZettError as error:
        _show_error(error, json_output)
        code = "context_full" if isinstance(error, ContextOverflowError) else "error"
        raise typer.Exit(EXIT_CODES[code]) from None
    record = response_record(response)
    if json_output:
        _print_json(record)
    else:
        _show_record(record, f"{vendor.name} · {wire} · {body_format} · HTTP {status}")
    raise typer.Exit(exit_code_for(response.stop_info))


def _show_error(error: ZettError, json_output: bool) -> None:
    if json_output:
        _print_json(error_record(error))
    else:
        err_console().print(f"✖ {type(error).__name__}: {_short(str(error))}", style="bold red",
                            markup=False, highlight=False)  # fmt: skip


def _print_json(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n")


def _show_record(record: dict[str, Any], source: str) -> None:
    from rich.text import Text

    from zett_agent.stop import StopInfo

    out = out_console()
    info = StopInfo.from_dict(record)
    colour = "green" if info.ok else ("red" if record["reason"] in _WITHHELD else "yellow")
    out.print(Text(source, style="dim"))
    out.print(Text(f"stop: {info.describe()}", style=f"bold {colour}"), soft_wrap=True)
    if record["raw"] is not None:
        out.print(Text(f"raw: {record['raw']}", style="dim"))
    if record["recommended_model"]:
        out.print(f"recommended model: {record['recommended_model']}")
    if record["detail"]:
        out.print(Text(f"detail: {json.dumps(record['detail'], ensure_ascii=False)}", style="dim"))
    out.print(Text("text:", style="bold"))
    out.print(
        Text(record["text"]) if record["text"] else Text("(none)", style="dim"), soft_wrap=True
    )
    if record["tool_calls"]:
        out.print(Text("tool calls:", style="bold"))
        for call in record["tool_calls"]:
            out.print(
                Text(f"  {call['name']}({call['arguments']})  id={call['id']}"), soft_wrap=True
            )
    if record["cut_tool_calls"]:
        names = ", ".join(record["cut_tool_calls"])
        out.print(Text(f"cut tool calls (not run): {names}", style="bold red"))
    if record["withheld_tool_calls"]:
        names = ", ".join(record["withheld_tool_calls"])
        out.print(Text(f"withheld tool calls (not run): {names}", style="bold red"))
