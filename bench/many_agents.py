"""Memory of many agents built from "provider:model" strings (issue 12).

A script, not a test: prints the RSS growth of N agents made with
``create_agent("openai:gpt-x")`` against a baseline measured in the same run: N
httpx clients made as a Model made its own before it shared one TLS context
(``httpx.AsyncClient()`` each, loading its own CA bundle).

    python bench/many_agents.py [N]
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def main(n: int) -> None:
    import httpx

    from zett_agent import create_agent

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-000000")
    await (await create_agent("openai:gpt-x")).aclose()  # imports, the shared context
    gc.collect()
    base = rss_mb()
    agents = [await create_agent("openai:gpt-x") for _ in range(n)]
    zett = rss_mb() - base
    for agent in agents:
        await agent.aclose()
    del agents
    gc.collect()
    base = rss_mb()
    clients = [httpx.AsyncClient() for _ in range(n)]  # a TLS context each
    own = rss_mb() - base
    for client in clients:
        await client.aclose()
    print(f"{n} agents from strings: +{zett:.1f} MB RSS ({zett / n * 1024:.0f} KB each)")
    print(f"{n} httpx clients with their own TLS context (the old way): +{own:.1f} MB RSS")
    print(f"ratio: {own / max(zett, 0.1):.0f}x less memory")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))
