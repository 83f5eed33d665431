"""A server asks a person for input during a tool call: MCP elicitation
(``elicitation/create``; on a 2026-07-28 connection an input request inside the
tool's result, which the SDK hands to the same callback).

The host gives :class:`~zett_agent.mcp.MCPTools` an :data:`Elicit` callback. The
rules, in order:

1. Only inside a gated tool call: a request while no ``tools/call`` of that server
   is in flight (the call passed the tool gate, :mod:`zett_agent.tools._gate`) is
   declined. Each request becomes a TOOL_INPUT_REQUESTED event of that call
   (``data`` is :meth:`ElicitationRequest.to_dict`), so a UI can show it.
2. No callback (no way to ask): declined at once, never waited on.
3. Form mode (``requestedSchema``: flat properties of string, number, integer,
   boolean or enum): :attr:`ElicitationRequest.defaults` are the schema's
   ``default`` values, for a form to start from or to accept as they are.
   URL mode: the person is sent to ``url``; accepting means they went.
   A URL is opened only when it is ``https:`` with a host, or ``http:`` to this
   machine (``localhost``, 127.0.0.0/8, ``::1``); any other (``javascript:``,
   ``file:``, ``data:``, plain ``http:`` elsewhere, one with spaces or control
   characters) is declined at once with the reason (:func:`url_problem`, in the
   result's ``_meta["zett-agent/reason"]``), and never reaches the host.
4. An accepted form answer is checked against the requested schema before it is
   sent (:func:`answer_problem`: only the form's fields, each of its type, enum
   and constraints); one that does not fit is never sent: the server gets
   ``cancel`` with the reason, and ``zett serve``'s page is answered 422 naming
   the field (the request keeps waiting for a valid answer).
5. The wait for the person does not count against the call's timeout (the
   connection's clocks stop, :meth:`~zett_agent.mcp._connection.Connection.person_asked`);
   it is bounded by ``elicitation_timeout`` (default 600 s), after which the
   request is answered ``cancel``; cancelling the run ends the wait too.

The CLI's callback is :func:`ask_in_terminal` (on a TTY only); ``zett serve``'s is
its page form (``serve/_elicitations.py``).
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

__all__ = [
    "DEFAULT_ELICITATION_TIMEOUT",
    "REASON_META",
    "Elicit",
    "ElicitationField",
    "ElicitationRequest",
    "ElicitationResponse",
    "answer_problem",
    "ask_in_terminal",
    "url_problem",
]

REASON_META = "zett-agent/reason"
"""The ``_meta`` key of an elicitation result that says why zett declined it."""

DEFAULT_ELICITATION_TIMEOUT = 600.0
"""Seconds a person may take to answer one elicitation (then: ``cancel``)."""

Action = Literal["accept", "decline", "cancel"]


@dataclass(frozen=True)
class ElicitationField:
    """One field of a form: ``name``, JSON ``type`` (``string``, ``number``,
    ``integer``, ``boolean``; an enum is a ``string`` with ``choices``), ``title``,
    ``description``, ``required``, ``default`` (None: none), ``choices``,
    ``multiple`` (an array of choices)."""

    name: str
    type: str
    title: str = ""
    description: str = ""
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()
    multiple: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "title": self.title or self.name,
            "description": self.description,
            "required": self.required,
            "default": self.default,
            "choices": list(self.choices),
            "multiple": self.multiple,
        }


@dataclass(frozen=True)
class ElicitationRequest:
    """What a server asks: ``mode`` ``"form"`` (``fields`` from ``schema``) or
    ``"url"`` (go to ``url``), with the server's ``message``. ``id`` is zett's
    (answer by it in ``zett serve``), ``server`` the server's label, ``call_id``
    and ``tool`` the tool call it came during."""

    mode: Literal["form", "url"]
    message: str
    server: str
    tool: str = ""
    call_id: str = ""
    schema: Mapping[str, Any] = field(default_factory=dict)
    url: str = ""
    elicitation_id: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def fields(self) -> list[ElicitationField]:
        """The form's fields, in the schema's order (none in URL mode)."""
        properties = self.schema.get("properties")
        if not isinstance(properties, Mapping):
            return []
        required = self.schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        out = []
        for name, spec in properties.items():
            if not isinstance(spec, Mapping):
                continue
            kind = spec.get("type") if isinstance(spec.get("type"), str) else "string"
            choices, multiple = _choices(spec)
            out.append(
                ElicitationField(
                    name=str(name),
                    type="string" if multiple else str(kind),
                    title=str(spec.get("title") or ""),
                    description=str(spec.get("description") or ""),
                    required=name in needed,
                    default=spec.get("default"),
                    choices=choices,
                    multiple=multiple,
                )
            )
        return out

    @property
    def defaults(self) -> dict[str, Any]:
        """The schema's ``default`` values (SEP-1034), by field name."""
        return {f.name: f.default for f in self.fields if f.default is not None}

    def to_dict(self) -> dict[str, Any]:
        """JSON values: what TOOL_INPUT_REQUESTED carries and a page renders."""
        return {
            "id": self.id,
            "kind": "elicitation",
            "mode": self.mode,
            "message": self.message,
            "server": self.server,
            "tool": self.tool,
            "call_id": self.call_id,
            "url": self.url,
            "fields": [f.to_dict() for f in self.fields],
            "defaults": self.defaults,
        }


@dataclass(frozen=True)
class ElicitationResponse:
    """The person's answer: ``accept`` (with ``content`` for a form), ``decline``
    or ``cancel`` (dismissed, or the wait ran out)."""

    action: Action
    content: Mapping[str, Any] | None = None

    @classmethod
    def accept(cls, content: Mapping[str, Any] | None = None) -> ElicitationResponse:
        return cls("accept", dict(content or {}))

    @classmethod
    def decline(cls) -> ElicitationResponse:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationResponse:
        return cls("cancel")


Elicit = Callable[[ElicitationRequest], Awaitable[ElicitationResponse]]
"""The host callback: ask a person, return their answer."""


def _choices(spec: Mapping[str, Any]) -> tuple[tuple[str, ...], bool]:
    """The enum values of a field (titled ``oneOf``/``anyOf`` consts too, SEP-1330),
    and whether several may be chosen (an array of them)."""
    multiple = spec.get("type") == "array"
    source = spec.get("items") if multiple and isinstance(spec.get("items"), Mapping) else spec
    assert isinstance(source, Mapping)
    values = source.get("enum")
    if isinstance(values, list):
        return tuple(str(v) for v in values), multiple
    for key in ("oneOf", "anyOf"):
        options = source.get(key)
        if isinstance(options, list):
            consts = [o.get("const") for o in options if isinstance(o, Mapping)]
            return tuple(str(c) for c in consts if c is not None), multiple
    return (), multiple


def url_problem(url: str) -> str | None:
    """Why zett does not send a person to ``url`` (None: it is ``https:`` with a
    host, or ``http:`` to this machine)."""
    import ipaddress
    from urllib.parse import urlsplit

    if not url or any(ch.isspace() or not ch.isprintable() for ch in url):
        return "the URL is empty or holds spaces or control characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "the URL cannot be read"
    scheme = parts.scheme.lower()
    if scheme == "https" and host:
        return None
    if scheme == "http" and host:
        if host == "localhost" or host.endswith(".localhost"):
            return None
        try:
            if ipaddress.ip_address(host).is_loopback:
                return None
        except ValueError:
            pass
        return "an http: URL is opened only on this machine (localhost); use https:"
    return f"zett opens only https: URLs (and http: to localhost), not {scheme or 'this'}: ones"


def answer_problem(schema: Mapping[str, Any], content: Any) -> str | None:
    """Why ``content`` (an accepted form answer) does not fit the requested
    ``schema``, naming the field; None when it does. Checked: an object, only the
    form's fields, the required ones present, each of its type (an integer is a
    whole number, a boolean never a number) and choices, then the schema's own
    constraints (``jsonschema``, when the schema can be read)."""
    if not isinstance(content, Mapping):
        return "the answer must be an object of the form's fields"
    request = ElicitationRequest(mode="form", message="", server="", schema=schema)
    fields = {item.name: item for item in request.fields}
    for name in content:
        if name not in fields:
            return f"{name}: not a field of this form"
    for item in fields.values():
        if item.name not in content:
            if item.required:
                return f"{item.name}: required"
            continue
        problem = _value_problem(item, content[item.name])
        if problem is not None:
            return f"{item.name}: {problem}"
    from ._convert import _schema_problem

    return _schema_problem(schema, dict(content))


def _value_problem(item: ElicitationField, value: Any) -> str | None:
    if item.multiple:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return "must be a list of choices"
        wrong = [v for v in value if item.choices and v not in item.choices]
        return f"{wrong[0]!r} is not one of {', '.join(item.choices)}" if wrong else None
    kinds: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "number": (int, float),
        "integer": (int,),
        "boolean": (bool,),
    }
    wanted = kinds.get(item.type)
    if wanted is None:
        return None
    if isinstance(value, bool) and item.type != "boolean":
        return f"must be a {item.type}"
    if not isinstance(value, wanted):
        return f"must be a {item.type}"
    if item.choices and value not in item.choices:
        return f"{value!r} is not one of {', '.join(item.choices)}"
    return None


def coerce(field: ElicitationField, text: str) -> Any:
    """A typed value from what a person typed (raises ``ValueError``)."""
    if field.multiple:
        return [part.strip() for part in text.split(",") if part.strip()]
    if field.type == "boolean":
        if text.lower() in ("y", "yes", "true", "1"):
            return True
        if text.lower() in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    if field.type == "integer":
        return int(text)
    if field.type == "number":
        return float(text)
    if field.choices and text not in field.choices:
        raise ValueError(f"one of {', '.join(field.choices)}")
    return text


async def ask_in_terminal(request: ElicitationRequest) -> ElicitationResponse:
    """The CLI's :data:`Elicit`: asks on the terminal (stderr, stdin), one line per
    field with its default; an empty line keeps the default. Declines when stdin
    is not a terminal (nobody can be asked)."""
    if not sys.stdin.isatty():
        return ElicitationResponse.decline()

    from zett_agent._terminal_text import one_line, terminal_safe

    def ask() -> ElicitationResponse:
        out = sys.stderr
        server, message = one_line(request.server), terminal_safe(request.message)
        print(f"\nMCP server {server} asks: {message}", file=out)
        if request.mode == "url":
            print(f"  open: {one_line(request.url)}", file=out)
            done = input("Did you complete it there? [y/N] ").strip().lower()
            return (
                ElicitationResponse.accept()
                if done in ("y", "yes")
                else ElicitationResponse.decline()
            )
        if input("Answer it? [y/N] ").strip().lower() not in ("y", "yes"):
            return ElicitationResponse.decline()
        content: dict[str, Any] = {}
        for item in request.fields:
            hint = f" ({'/'.join(item.choices)})" if item.choices else f" ({item.type})"
            shown = "" if item.default is None else f" [{json.dumps(item.default)}]"
            prompt = one_line(f"  {item.title or item.name}{hint}{shown}: ")
            while True:
                text = input(prompt).strip()
                if not text:
                    if item.default is not None:
                        content[item.name] = item.default
                    elif item.required:
                        continue
                    break
                try:
                    content[item.name] = coerce(item, text)
                    break
                except ValueError as error:
                    print(f"  {one_line(str(error))}", file=out)
        return ElicitationResponse.accept(content)

    return await anyio.to_thread.run_sync(ask, abandon_on_cancel=True)
