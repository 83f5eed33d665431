"""``zett doctor``: how a model would reach its provider (base URL, proxy, CA bundle)."""

from __future__ import annotations

import typer

from zett_agent.cli._main import app, out_console

__all__ = ["doctor"]


@app.command()
def doctor(
    providers: list[str] = typer.Argument(  # noqa: B008
        None, help="providers (or provider:model) to check; default: every provider"
    ),
) -> None:
    """Print, per provider, the base URL, the proxy a call would go through (its
    credentials as ***), what decided it (proxy variables, NO_PROXY), and the CA
    bundle that checks the provider's certificate. Sends nothing."""
    from rich import box
    from rich.table import Table

    from zett_agent.errors import ConfigError
    from zett_agent.model._model import Model, _first_env
    from zett_agent.vendors import VENDORS, get_vendor

    names = [p.partition(":")[0] for p in providers] if providers else list(VENDORS)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("provider", no_wrap=True)
    table.add_column("base URL / proxy / CA bundle", overflow="fold")
    for name in names:
        try:
            vendor = get_vendor(name)
            if vendor.model_class and _first_env((vendor.base_url_variable,)) is None:
                table.add_row(vendor.name, "a local server zett starts on loopback (no proxy)")
                continue
            # a placeholder key: nothing is sent, and no key is read or printed
            network = Model(vendor, "doctor", api_key="unused").network()
        except ConfigError as error:
            table.add_row(name, f"({error})")
            continue
        table.add_row(
            vendor.name,
            f"{network['url']}\nproxy: {network['proxy']} (from: {network['source']})\n"
            f"CA: {network['ca']}",
        )
    out_console().print(table)
