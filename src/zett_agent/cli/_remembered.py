"""A stored session remembers how it ran: ``zett run --db`` and ``zett sessions
resume`` continue it with its own model, tools, MCP servers and approval options.

Each run of a stored session writes a :class:`~zett_agent._records.RunSettings`
row when its settings differ from the session's last ones. A later run of that
session (``zett sessions resume ID``, ``zett run --session ID``, the command the
exit-9 notice prints) takes every setting it was not given on the command line
from that row:

=====================  =====================================================
``--model`` given      it wins, and the run says so when the session ran on
                       another model
``ZETT_MODEL`` only    not a choice for this session: the environment's model
                       is the default of *new* sessions, so a stored session
                       keeps its own (and the run says ``ZETT_MODEL`` was left)
neither                the session's model; a new session: ``ZETT_MODEL``,
                       else :data:`~zett_agent.cli._main.DEFAULT_MODEL`
=====================  =====================================================

``--tools``, ``--mcp`` and ``--require-approval`` are taken from the row the
same way when they are not on the command line. A session stored before these
rows existed has none: its runs use the command line and the defaults, as before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from zett_agent._records import RunSettings
from zett_agent._urls import REDACTED, redact_url

if TYPE_CHECKING:
    from rich.console import Console

    from zett_agent.cli._run import RunOptions
    from zett_agent.sessions import StoredRow

__all__ = ["last_settings", "settings_of", "stored_url", "with_remembered"]


def stored_url(spec: str) -> str:
    """An ``--mcp`` value as it is stored: a URL without ``user:password@`` and
    with its query-string credentials ``[redacted]`` (:func:`~zett_agent._urls.redact_url`)."""
    return redact_url(spec)


def settings_of(options: RunOptions) -> RunSettings:
    """The record of how ``options`` runs."""
    return RunSettings(
        model=options.model or "",
        tools=tuple(getattr(tool, "__name__", str(tool)) for tool in options.tools),
        mcp=tuple(stored_url(spec) for spec in options.mcp),
        require_approval=tuple(options.require_approval),
    )


def last_settings(rows: Iterable[StoredRow]) -> RunSettings | None:
    """The session's last :class:`RunSettings` row, or None."""
    found = None
    for row in rows:
        if isinstance(row.message, RunSettings):
            found = row.message
    return found


def with_remembered(
    options: RunOptions,
    stored: RunSettings | None,
    explicit: Collection[str],
    environment_model: str | None,
    default_model: str,
    err: Console,
) -> RunOptions:
    """``options`` with each remembered setting not in ``explicit`` (the options
    given on the command line) taken from ``stored``, the model resolved as the
    module docstring says; notes on ``err`` when a choice differs from the
    session's."""
    from zett_agent.demo_tools import select_demo_tools

    changes: dict[str, Any] = {}
    if "model" in explicit:
        if stored is not None and stored.model and stored.model != options.model:
            err.print(
                f"using --model {options.model} (the session ran on {stored.model})",
                style="yellow", markup=False, highlight=False, soft_wrap=True,
            )  # fmt: skip
    elif stored is not None and stored.model:
        changes["model"] = stored.model
        changes["model_variable"] = None
        if environment_model and environment_model != stored.model:
            err.print(
                f"continuing on the session's model {stored.model} (ZETT_MODEL="
                f"{environment_model} is for new sessions; --model switches)",
                style="dim", markup=False, highlight=False, soft_wrap=True,
            )  # fmt: skip
    else:
        changes["model"] = environment_model or default_model
    if stored is not None:
        if "tools" not in explicit:
            try:
                changes["tools"] = select_demo_tools(",".join(stored.tools) or "none")
            except ValueError:  # tools zett does not know (a host's own client)
                err.print(
                    f"the session ran with tools zett does not have ({', '.join(stored.tools)}):"
                    " offering those of --tools",
                    style="yellow", markup=False, highlight=False, soft_wrap=True,
                )  # fmt: skip
        if "mcp" not in explicit:
            changes["mcp"] = stored.mcp
            if any(REDACTED in spec for spec in stored.mcp):
                err.print(
                    "the session's --mcp URLs held credentials, which are not stored "
                    f"(shown as {REDACTED}): give --mcp again with them",
                    style="yellow", markup=False, highlight=False, soft_wrap=True,
                )  # fmt: skip
        if "require_approval" not in explicit:
            changes["require_approval"] = stored.require_approval
    return replace(options, **changes)
