"""How an MCP stdio server's large messages are read: the ``mcp`` SDK's stdio client
(the baseline) against zett's bounded reader (``mcp/_stdio.py``), in the same run.

Each case starts tests/mcp_servers/hostile_server.py once per reader, calls one
tool and measures the call's wall time and the peak of Python allocations
(tracemalloc) during it:

* ``big`` of 8 and 16 MiB, zett's limit raised above the message (it reads the
  whole message, as the SDK does), so the times compare the two readers;
* ``blocks`` of 100,000 empty content blocks, zett's default limits: it counts the
  blocks before the SDK's models are made and refuses the result.

Prints one line per case with the ratio SDK / zett. ``--smoke``: 1 MiB and 10,000
blocks (seconds; CI). Run: ``python bench/mcp_stdio.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "mcp_servers" / "hostile_server.py"
MiB = 1024 * 1024


async def one_call(reader: str, tool: str, arguments: dict[str, Any]) -> tuple[float, int, str]:
    """(seconds, peak bytes, outcome) of one call through ``reader``."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from zett_agent.mcp import MCPLimits
    from zett_agent.mcp._stdio import bounded_stdio

    params = StdioServerParameters(command=sys.executable, args=["-W", "ignore", str(SERVER)])
    with open("/dev/null", "w") as quiet:
        if reader == "sdk":
            transport: Any = stdio_client(params, errlog=quiet)
        else:
            limits = MCPLimits(max_message_bytes=64 * MiB) if tool == "big" else MCPLimits()
            transport = bounded_stdio(params, quiet, limits)
        async with Client(transport, mode="legacy") as client:
            tracemalloc.start()
            tracemalloc.reset_peak()
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, arguments)
                outcome = f"{len(result.content)} blocks"
            except Exception as error:  # zett's refusal: a JSON-RPC error
                outcome = f"refused ({str(error)[:60]}...)"
            took = time.perf_counter() - started
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    return took, peak, outcome


async def main(smoke: bool) -> None:
    sizes = [1 * MiB] if smoke else [8 * MiB, 16 * MiB]
    cases: list[tuple[str, str, dict[str, Any]]] = [
        (f"big {size // MiB} MiB", "big", {"size": size}) for size in sizes
    ]
    count = 10_000 if smoke else 100_000
    cases.append((f"{count:,} blocks", "blocks", {"count": count}))
    print(f"{'case':<18} {'reader':<6} {'seconds':>8} {'peak MB':>8}  outcome")
    for name, tool, arguments in cases:
        figures = {}
        for reader in ("sdk", "zett"):
            took, peak, outcome = await one_call(reader, tool, arguments)
            figures[reader] = (took, peak)
            print(f"{name:<18} {reader:<6} {took:8.2f} {peak / 1e6:8.1f}  {outcome}")
        (sdk_s, sdk_m), (zett_s, zett_m) = figures["sdk"], figures["zett"]
        time_ratio, memory_ratio = sdk_s / zett_s, sdk_m / max(zett_m, 1)
        print(f"{name:<18} ratio  {time_ratio:7.1f}x {memory_ratio:7.1f}x  (SDK / zett)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="small sizes (CI)")
    anyio.run(main, parser.parse_args().smoke)
