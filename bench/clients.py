"""One client, measured in a fresh process: ``python bench/clients.py SPEC_JSON``.

``run.py`` starts this script once per client per round (with the project's
Python, or a peer's virtualenv Python for pydantic-ai, LiteLLM and zett-agent
0.2.1), so no client inherits another's imports, caches, threads or background
tasks. It imports only the standard library until it knows its client, and
prints one JSON object:

``cpu``/``wall``   seconds per run (client CPU: ``time.process_time``, all threads;
                   and wall time), one value per timed batch
``events``         items the client read in one run
``rss_import_mb``  the process's RSS after its imports and set-up
``rss_run_mb``     peak RSS of the first (cold) run minus ``rss_import_mb``
                   (``VmHWM`` after resetting it through ``/proc/self/clear_refs``)

The spec's keys: ``client``, ``url`` (the stream's base URL), ``protocol``,
``vendor``, ``requests`` (the floors' requests: ``[path, body, params]``, one per
HTTP request the run makes), ``batches``, ``per_batch`` (runs per timed batch),
``src`` (put first on ``sys.path``: the project's ``src``; absent for peers), and
for the concurrency clients ``runs``, ``http_clients``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

TOOL_NAME = "write_note"
TOOL_DESCRIPTION = "Write a note."
TOOL_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
PROMPT = "Write a note."


def write_note(text: str) -> str:
    """Write a note."""
    return f"wrote {len(text)} characters"


# ------------------------------------------------------------------ memory


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ------------------------------------------------------------------ the floors


def floor_factory(spec: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    """httpx + httpx-sse + a JSON parse of every event, for each request of the
    run in turn (one for the model rows, two for the agent rows)."""
    import httpx
    from httpx_sse import EventSource

    if spec["client"].endswith("json.loads"):
        parse: Callable[[str], Any] = json.loads
    else:  # the parser zett's decoders use
        raw = json.JSONDecoder().raw_decode

        def parse(data: str) -> Any:
            return raw(data)[0]

    if " pool " in spec["client"]:  # the HTTP stack zett's Model uses: httpx over zett's pool
        from zett_agent.model import ModelTransport

        client = httpx.AsyncClient(timeout=httpx.Timeout(120.0), transport=ModelTransport())
    else:
        client = httpx.AsyncClient(timeout=httpx.Timeout(120.0))
    url = spec["url"]
    requests = spec["requests"]

    async def split_run() -> int:
        """SSE split by hand from the raw body: bytes ops per network chunk, no
        per-line generator (what a framer of its own, like zett's, does)."""
        n = 0
        for path, body, params in requests:
            async with client.stream(
                "POST", url + path, json=body, params=params or None
            ) as response:
                tail = b""
                async for chunk in response.aiter_raw():
                    *events, tail = (tail + chunk).split(b"\n\n")
                    for event in events:
                        for line in event.split(b"\n"):
                            if line[:5] == b"data:":
                                data = line[5:].lstrip(b" ").decode()
                                if data != "[DONE]":
                                    parse(data)
                                n += 1
        return n

    if " bytes " in spec["client"]:
        return split_run

    async def run() -> int:
        n = 0
        for path, body, params in requests:
            async with client.stream(
                "POST", url + path, json=body, params=params or None
            ) as response:
                async for sse in EventSource(response).aiter_sse():
                    if sse.data != "[DONE]":
                        parse(sse.data)
                    n += 1
        return n

    return run


def aiohttp_floor_factory(spec: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    """The cheapest client on zett's stack: aiohttp's session straight (no httpx), SSE
    split by hand from each network chunk, ``json.loads`` of every event: the floor
    every client over aiohttp can reach (issue 32, item 3)."""
    import aiohttp

    url = spec["url"]
    requests = spec["requests"]
    session: Any = None
    loads = json.loads

    async def run() -> int:
        nonlocal session
        if session is None:
            session = aiohttp.ClientSession(auto_decompress=False)
        n = 0
        for path, body, params in requests:
            async with session.post(url + path, json=body, params=params or None) as response:
                tail = b""
                readany = response.content.readany
                while chunk := await readany():
                    *events, tail = (tail + chunk).split(b"\n\n")
                    for event in events:
                        for line in event.split(b"\n"):
                            if line[:5] == b"data:":
                                data = line[5:].lstrip(b" ")
                                if data != b"[DONE]":
                                    loads(data)
                                n += 1
        return n

    return run


def raw_socket_factory(spec: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    """The server's floor: bytes off a socket, no HTTP parsing."""
    host, port = spec["url"].split("//")[1].split("/")[0].split(":")
    prefix = "/" + spec["url"].split("//")[1].split("/", 1)[1]
    path = prefix + spec["requests"][0][0]

    async def run() -> int:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{{}}".encode())
        await writer.drain()
        total, tail = 0, b""
        while True:
            data = await reader.read(1 << 18)
            if not data:
                break
            total += len(data)
            tail = (tail + data)[-7:]
            if tail.endswith(b"\r\n0\r\n\r\n"):
                break
        writer.close()
        return total

    return run


# ------------------------------------------------------------------ zett (this tree or 0.2.1)


def zett_factory(spec: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    from zett_agent import AgentEventType, Model, UserMessage, create_agent
    from zett_agent._exchange import ModelRequest, ModelResponse, ToolSpec

    model = Model(spec["vendor"], "m", base_url=spec["url"], api_key="bench")
    tool = ToolSpec(TOOL_NAME, TOOL_DESCRIPTION, TOOL_SCHEMA)
    completed = AgentEventType.RUN_COMPLETED

    async def model_run() -> int:
        request = ModelRequest("m", [UserMessage(PROMPT)], tools=[tool])
        n = 0
        async for item in model.stream(request):
            n += 1
            if isinstance(item, ModelResponse):
                assert item.tool_calls, "the stream ends with a tool call"
        return n

    async def agent_run() -> int:
        agent = await create_agent(model, tools=[write_note])
        n = 0
        final = None
        async for event in agent.stream(PROMPT):
            n += 1
            if event.type is completed:
                final = event.message
        assert final is not None and final.text == "Done.", final
        return n

    return agent_run if spec["client"].endswith("agent") else model_run


def zett_021_factory(spec: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    """zett-agent 0.2.1 from PyPI (its own API: provider adapters, ``AgentClient``)."""
    from zett_agent.client import create_agent
    from zett_agent.events import AgentEventType
    from zett_agent.messages import UserMessage

    from zett_agent.model import ModelEventType, ModelRequest, ToolDefinition
    from zett_agent.tools import tool

    if spec["protocol"] == "openai-chat":
        from zett_agent.providers import OpenAIProvider

        provider: Any = OpenAIProvider("gpt-4o", "bench", base_url=spec["url"])
    else:
        from zett_agent.providers import AnthropicProvider

        provider = AnthropicProvider("claude-haiku-4-5", "bench", base_url=spec["url"])
    definition = ToolDefinition(TOOL_NAME, TOOL_DESCRIPTION, TOOL_SCHEMA)
    note_tool = tool(write_note, snippet="write_note(text)", guidelines="Write a note.")
    completed = ModelEventType.RESPONSE
    run_completed = AgentEventType.RUN_COMPLETED

    async def model_run() -> int:
        request = ModelRequest(messages=[UserMessage(content=PROMPT)], tools=[definition])
        n = 0
        response = None
        async for event in provider.stream(request):
            n += 1
            if event.type is completed:
                response = event.response
        assert response is not None and response.message.tool_calls, response
        return n

    async def agent_run() -> int:
        client = await create_agent(provider, tools=[note_tool], extensions=[])
        n = 0
        final = None
        async for event in client.stream(PROMPT):
            n += 1
            if event.type is run_completed:
                final = event
        assert final is not None
        return n

    return agent_run if spec["client"].endswith("agent") else model_run


# ------------------------------------------------------------------ peers


def pydantic_ai_factory(spec: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    from pydantic_ai import Agent as PAgent
    from pydantic_ai import ModelRequest as PModelRequest
    from pydantic_ai.direct import model_request_stream
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.tools import ToolDefinition

    base = spec["url"]
    if spec["protocol"] == "openai-chat":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model: Any = OpenAIChatModel(
            "gpt-4o", provider=OpenAIProvider(base_url=base, api_key="bench")
        )
    else:
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        model = AnthropicModel(
            "claude-haiku-4-5", provider=AnthropicProvider(base_url=base, api_key="bench")
        )
    params = ModelRequestParameters(
        function_tools=[
            ToolDefinition(
                name=TOOL_NAME, parameters_json_schema=TOOL_SCHEMA, description=TOOL_DESCRIPTION
            )
        ]
    )

    async def model_run() -> int:
        messages = [PModelRequest.user_text_prompt(PROMPT)]
        n = 0
        async with model_request_stream(model, messages, model_request_parameters=params) as s:
            async for _ in s:
                n += 1
            response = s.get()
        assert response.tool_calls, "pydantic-ai did not assemble the tool call"
        return n

    async def agent_run() -> int:
        agent = PAgent(model, tools=[write_note])
        n = 0
        async with agent.iter(PROMPT) as run:
            async for node in run:
                if PAgent.is_model_request_node(node):
                    async with node.stream(run.ctx) as request_stream:
                        async for _ in request_stream:
                            n += 1
        assert run.result is not None and run.result.output == "Done.", run.result
        return n

    return agent_run if spec["client"].endswith("agent") else model_run


def litellm_factory(spec: dict[str, Any]) -> Callable[[], Awaitable[int]]:
    import logging
    import warnings

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.disable_streaming_logging = True
    litellm.turn_off_message_logging = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    model = "openai/gpt-4o" if spec["protocol"] == "openai-chat" else "anthropic/claude-haiku-4-5"
    tools = [
        {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": TOOL_DESCRIPTION,
                "parameters": TOOL_SCHEMA,
            },
        }
    ]

    async def run() -> int:
        response = await litellm.acompletion(
            model=model,
            api_base=spec["url"],
            api_key="bench",
            messages=[{"role": "user", "content": PROMPT}],
            tools=tools,
            stream=True,
        )
        chunks = [chunk async for chunk in response]
        final = litellm.stream_chunk_builder(chunks)
        assert final is not None and final.choices[0].message.tool_calls, "no tool call"
        return len(chunks)

    return run


FACTORIES: dict[str, Callable[[dict[str, Any]], Callable[[], Awaitable[int]]]] = {
    "raw socket": raw_socket_factory,
    "floor json.loads": floor_factory,
    "floor raw_decode": floor_factory,
    "floor2 json.loads": floor_factory,
    "floor2 raw_decode": floor_factory,
    "floor bytes raw_decode": floor_factory,
    "floor2 bytes raw_decode": floor_factory,
    "floor pool bytes raw_decode": floor_factory,
    "floor2 pool bytes raw_decode": floor_factory,
    "floor aiohttp json.loads": aiohttp_floor_factory,
    "floor2 aiohttp json.loads": aiohttp_floor_factory,
    "zett model": zett_factory,
    "zett agent": zett_factory,
    "zett-0.2.1 model": zett_021_factory,
    "zett-0.2.1 agent": zett_021_factory,
    "pydantic-ai model": pydantic_ai_factory,
    "pydantic-ai agent": pydantic_ai_factory,
    "litellm model": litellm_factory,
}


# ------------------------------------------------------------------ concurrency


def _stamp(text: str) -> int | None:
    return int(text[1:-1]) if text.startswith("@") else None


async def concurrency(spec: dict[str, Any]) -> dict[str, Any]:
    """``runs`` simultaneous paced streams spread over ``http_clients`` httpx
    clients; client CPU of the whole batch, latency = receipt - server write."""
    import httpx

    runs, n_clients = spec["runs"], spec["http_clients"]
    per = -(-runs // n_clients)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=per)
    clients = [
        httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(120.0)) for _ in range(n_clients)
    ]
    latencies: list[int] = []
    path, body, _ = spec["requests"][0]
    url = spec["url"]
    if spec["client"] == "floor":
        from httpx_sse import EventSource

        raw = json.JSONDecoder().raw_decode

        async def one(i: int) -> None:
            client = clients[i % n_clients]
            async with client.stream("POST", url + path, json=body) as response:
                async for sse in EventSource(response).aiter_sse():
                    if sse.data == "[DONE]":
                        continue
                    choices = raw(sse.data)[0]["choices"]
                    text = choices[0]["delta"].get("content") if choices else None
                    if text and (t := _stamp(text)) is not None:
                        latencies.append(time.monotonic_ns() - t)

    else:
        from zett_agent import AgentEventType, Model, create_agent

        models = [
            Model(spec["vendor"], "m", base_url=url, api_key="bench", client=c) for c in clients
        ]
        text_delta = AgentEventType.TEXT_DELTA

        async def one(i: int) -> None:
            agent = await create_agent(models[i % n_clients])
            async for event in agent.stream("Say something."):
                if event.type is text_delta and event.text:
                    t = _stamp(event.text)
                    if t is not None:
                        latencies.append(time.monotonic_ns() - t)

    await asyncio.gather(*(one(i) for i in range(n_clients)))  # warm-up: a connection each
    latencies.clear()
    gc.collect()
    rss0 = rss_bytes()
    reset_peak()
    cpu, start = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - start
    growth = max(0, peak_bytes() - rss0)
    for c in clients:
        await c.aclose()
    latencies.sort()
    count = len(latencies)
    assert count == runs * spec["n_text"], (count, runs * spec["n_text"])
    return {
        "cpu": [cpu],
        "wall": [wall],
        "events": count,
        "p50_ms": latencies[count // 2] / 1e6,
        "p99_ms": latencies[min(count - 1, int(count * 0.99))] / 1e6,
        "rss_import_mb": rss0 / 2**20,
        "rss_run_mb": growth / 2**20,
    }


# ------------------------------------------------------------------ main


async def measure(spec: dict[str, Any]) -> dict[str, Any]:
    run = FACTORIES[spec["client"]](spec)
    gc.collect()
    rss0 = rss_bytes()
    reset_peak()
    events = await run()  # cold: imports used lazily, connection, caches
    growth = max(0, peak_bytes() - rss0)
    cpus, walls = [], []
    per = spec.get("per_batch", 1)
    for _ in range(spec["batches"]):
        gc.collect()
        cpu, start = time.process_time(), time.perf_counter()
        for _ in range(per):
            await run()
        cpus.append((time.process_time() - cpu) / per)
        walls.append((time.perf_counter() - start) / per)
    return {
        "cpu": cpus,
        "wall": walls,
        "events": events,
        "rss_import_mb": rss0 / 2**20,
        "rss_run_mb": growth / 2**20,
    }


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec.get("src"):
        sys.path.insert(0, spec["src"])
    result = asyncio.run(concurrency(spec)) if "runs" in spec else asyncio.run(measure(spec))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
