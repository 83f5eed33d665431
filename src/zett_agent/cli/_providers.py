"""``zett providers``: the providers, their wire protocol, key variables and base URL."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zett_agent.cli._main import app, out_console

if TYPE_CHECKING:
    from zett_agent.vendors import Vendor

__all__ = ["providers"]


_SHORT_PROTOCOL = {
    "anthropic": "messages",
    "openai-chat": "chat",
    "openai-responses": "responses",
    "gemini": "gemini",
    "ollama": "ollama",
}
"""Protocol names as ``zett inspect --protocol`` spells them (short, for 80 columns)."""


@app.command()
def providers() -> None:
    """List the providers: wire protocol, key variables, whether a key is set, and
    the base URL in force. Keys are never printed."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from zett_agent.model._model import _first_env
    from zett_agent.vendors import VENDORS

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("provider", no_wrap=True)
    table.add_column("protocol", no_wrap=True)
    table.add_column("key variable: state / base URL", overflow="fold")
    for vendor in VENDORS.values():
        has_key = _first_env(vendor.key_env) is not None
        state = "set" if has_key else ("not needed" if not vendor.key_required else "missing")
        style = "green" if has_key else ("dim" if not vendor.key_required else "yellow")
        key = Text(" or ".join(vendor.key_env) + ": " if vendor.key_required else "key: ")
        key.append(state, style=style)
        key.append("\n" + _url_of(vendor), style="dim")
        table.add_row(vendor.name, _SHORT_PROTOCOL.get(vendor.protocol, vendor.protocol), key)
    out_console().print(table)


def _url_of(vendor: Vendor) -> str:
    from zett_agent.errors import ConfigError
    from zett_agent.model._model import _base_url_from_env, _first_env

    if vendor.model_class and _first_env((vendor.base_url_variable,)) is None:
        return "local server started on demand"
    try:
        return _base_url_from_env(vendor)
    except ConfigError as error:  # e.g. Vertex without a project: say what to set
        return f"({error})"
