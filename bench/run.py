"""zett-agent against the floor and the peers, measured in one run.

What it measures: the CPU time (and wall time, and Python memory peak) a client
spends reading one complete streamed model response -- request sent to final
response -- from a local stream server, for zett's ``Model.stream()`` and agent
run, a bare httpx + httpx-sse + ``json.loads`` loop (the floor), pydantic-ai and
LiteLLM; it prints each as a ratio to the floor and to zett measured in the same
run. It does not measure provider latency or the model.

Usage::

    .venv/bin/python bench/run.py            # full: 10,000 text deltas + 200 tool fragments
    .venv/bin/python bench/run.py --quick    # small streams, under a minute
    .venv/bin/python bench/run.py --json     # one JSON object instead of the tables

Every client reads the same bytes from ``bench/server.py`` (its own process, raw
asyncio, pre-built bytes). Times are the median wall time of one complete run
(request to final response) over the repeats, measured with tracemalloc off;
memory is the tracemalloc peak (Python allocations in this process) of one extra
run. See ``bench/README.md`` for what each column means.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from httpx_sse import EventSource

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import streams  # noqa: E402

from zett_agent import Model, create_agent  # noqa: E402
from zett_agent.events import AgentEventType  # noqa: E402
from zett_agent.messages import UserMessage  # noqa: E402
from zett_agent.protocols import get_protocol  # noqa: E402
from zett_agent.protocols.base import ModelRequest, ModelResponse, ToolSpec  # noqa: E402
from zett_agent.vendors import get_vendor  # noqa: E402

PROTOCOLS = ("anthropic", "openai-chat", "gemini")
VENDOR = {"anthropic": "anthropic", "openai-chat": "openai", "gemini": "google"}
TOOL = ToolSpec(
    streams.TOOL_NAME,
    "Write a note.",
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)
NOTES: list[str] = []


def write_note(text: str) -> str:
    """Write a note."""
    return f"wrote {len(text)} characters"


# ------------------------------------------------------------------ the server


class Server:
    """``bench/server.py`` in a subprocess."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "server.py")], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"

    def base(self, protocol: str, n_text: int, n_tool: int) -> str:
        return f"{self.url}/s/{protocol}/{n_text}/{n_tool}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)


# ------------------------------------------------------------------ measuring


@dataclass
class Figure:
    name: str
    seconds: float | None = None
    wall_seconds: float | None = None
    peak_bytes: int | None = None
    events: int = 0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


async def measure(
    name: str, run: Callable[[], Awaitable[int]], repeats: int, *, memory: bool = True
) -> Figure:
    """Best client CPU time (``time.process_time``: this process, all its threads) and
    best wall time of ``run`` over ``repeats`` (it returns the events it read), and
    the tracemalloc peak of one more run. CPU time, because the server runs in its
    own process and the machine is shared: it is the work the client library did.
    The best, not the median: interference only ever adds time."""
    events = await run()  # warm-up: imports, connection pool, caches
    times, walls = [], []
    for _ in range(repeats):
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        await run()
        times.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - start)
    peak = None
    if memory:
        gc.collect()
        tracemalloc.start()
        tracemalloc.reset_peak()
        await run()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return Figure(name, min(times), min(walls), peak, events)


def request_path(protocol: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """Path, body and params zett would send (the floor sends the same)."""
    http = get_protocol(protocol).encode_request(
        ModelRequest("m", [UserMessage("Write a note.")], tools=[TOOL]),
        get_vendor(VENDOR[protocol]),
    )
    return http.path, dict(http.body), dict(http.params)


async def floor_run(client: httpx.AsyncClient, base: str, protocol: str) -> int:
    """The floor: httpx + httpx-sse + json.loads, reading every event and nothing else."""
    path, body, params = request_path(protocol)
    n = 0
    async with client.stream("POST", base + path, json=body, params=params or None) as response:
        async for sse in EventSource(response).aiter_sse():
            if sse.data != "[DONE]":
                json.loads(sse.data)
            n += 1
    return n


async def raw_socket_run(port: int, path: str) -> int:
    """The server's floor: bytes off a socket, no HTTP parsing beyond the terminator."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{{}}".encode())
    await writer.drain()
    total = 0
    tail = b""
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


def zett_model(base: str, protocol: str, client: httpx.AsyncClient | None = None) -> Model:
    return Model(VENDOR[protocol], "m", base_url=base, api_key="bench", client=client)


async def zett_model_run(model: Model) -> int:
    request = ModelRequest("m", [UserMessage("Write a note.")], tools=[TOOL])
    n = 0
    async for item in model.stream(request):
        n += 1
        if isinstance(item, ModelResponse):
            assert item.stop_info is not None
            assert item.tool_calls, "the big stream ends with a tool call"
    return n


async def zett_agent_run(model: Model) -> int:
    agent = await create_agent(model, tools=[write_note])
    n = 0
    final = None
    async for event in agent.stream("Write a note."):
        n += 1
        if event.type is AgentEventType.RUN_COMPLETED:
            final = event.message
    assert final is not None and final.text == "Done.", final
    return n


# ------------------------------------------------------------------ peers


def peer_versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in ("pydantic-ai-slim", "litellm"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def pydantic_ai_model(protocol: str, base: str) -> Any:
    """pydantic-ai's model for ``protocol``, with the HTTP client its provider makes."""
    if protocol == "openai-chat":
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        return OpenAIChatModel("gpt-4o", provider=OpenAIProvider(base_url=base, api_key="bench"))
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    return AnthropicModel(
        "claude-haiku-4-5",
        provider=AnthropicProvider(base_url=base, api_key="bench"),
    )


async def pydantic_ai_model_run(model: Any) -> int:
    from pydantic_ai import ModelRequest as PModelRequest
    from pydantic_ai.direct import model_request_stream
    from pydantic_ai.models import ModelRequestParameters
    from pydantic_ai.tools import ToolDefinition

    params = ModelRequestParameters(
        function_tools=[
            ToolDefinition(
                name=TOOL.name,
                parameters_json_schema=dict(TOOL.parameters),
                description=TOOL.description,
            )
        ]
    )
    messages = [PModelRequest.user_text_prompt("Write a note.")]
    n = 0
    async with model_request_stream(model, messages, model_request_parameters=params) as stream:
        async for _ in stream:
            n += 1
        response = stream.get()
    assert response.tool_calls, "pydantic-ai did not assemble the tool call"
    return n


async def pydantic_ai_agent_run(model: Any) -> int:
    from pydantic_ai import Agent as PAgent

    agent = PAgent(model, tools=[write_note])
    n = 0
    async with agent.iter("Write a note.") as run:
        async for node in run:
            if PAgent.is_model_request_node(node):
                async with node.stream(run.ctx) as request_stream:
                    async for _ in request_stream:
                        n += 1
    assert run.result is not None and run.result.output == "Done.", run.result
    return n


async def litellm_run(protocol: str, base: str) -> int:
    import litellm

    model = "openai/gpt-4o" if protocol == "openai-chat" else "anthropic/claude-haiku-4-5"
    tools = [
        {
            "type": "function",
            "function": {
                "name": TOOL.name,
                "description": TOOL.description,
                "parameters": dict(TOOL.parameters),
            },
        }
    ]
    response = await litellm.acompletion(
        model=model,
        api_base=base,
        api_key="bench",
        messages=[{"role": "user", "content": "Write a note."}],
        tools=tools,
        stream=True,
    )
    chunks = [chunk async for chunk in response]
    final = litellm.stream_chunk_builder(chunks)
    assert final is not None and final.choices[0].message.tool_calls, "no tool call"  # type: ignore[union-attr]
    return len(chunks)


def quiet_litellm() -> None:
    import logging

    import litellm

    litellm.telemetry = False
    litellm.suppress_debug_info = True
    litellm.disable_streaming_logging = True
    litellm.turn_off_message_logging = True
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)


# ------------------------------------------------------------------ sans-IO


def sansio_figures(protocol: str, n_text: int, n_tool: int, repeats: int) -> dict[str, Any]:
    events = streams.build(protocol, n_text, n_tool)
    data = [d for _, d in events if d != "[DONE]"]
    named = [(e or "message", d) for e, d in events]
    wire = get_protocol(protocol)
    vendor = get_vendor(VENDOR[protocol])

    def decode() -> None:
        decoder = wire.decoder(vendor)
        feed = decoder.feed_sse
        for event, payload in named:
            feed(event, payload)
        assert decoder.finish().tool_calls

    def loads() -> None:
        for payload in data:
            json.loads(payload)

    out = {}
    for name, fn in (("json.loads", loads), ("decoder", decode)):
        fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        out[name] = min(times)
    out["ratio"] = out["decoder"] / out["json.loads"]
    out["decoder_us_per_event"] = (out["decoder"] - out["json.loads"]) / len(named) * 1e6
    return out


# ------------------------------------------------------------------ concurrency


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _stamp(text: str) -> int | None:
    if text.startswith("@"):
        return int(text[1:-1])
    return None


async def concurrent(
    server: Server, kind: str, runs: int, n_text: int, burst: int, ms: int
) -> dict[str, Any]:
    """``runs`` simultaneous streamed runs; latency = receipt - server write (monotonic)."""
    base = f"{server.url}/p/{burst}/{ms}/{n_text}"
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=runs)
    latencies: list[int] = []
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(120.0)) as client:
        model = zett_model(base, "openai-chat", client)

        async def floor_one() -> None:
            path, body, _ = request_path("openai-chat")
            async with client.stream("POST", base + path, json=body) as response:
                async for sse in EventSource(response).aiter_sse():
                    if sse.data == "[DONE]":
                        continue
                    chunk = json.loads(sse.data)
                    choices = chunk["choices"]
                    text = choices[0]["delta"].get("content") if choices else None
                    if text and (t := _stamp(text)) is not None:
                        latencies.append(time.monotonic_ns() - t)

        async def zett_one() -> None:
            agent = await create_agent(model)
            async for event in agent.stream("Say something."):
                if event.type is AgentEventType.TEXT_DELTA and event.text:
                    t = _stamp(event.text)
                    if t is not None:
                        latencies.append(time.monotonic_ns() - t)

        one = floor_one if kind == "floor" else zett_one
        await one()  # warm-up
        latencies.clear()
        gc.collect()
        rss0 = peak = rss_bytes()
        done = asyncio.Event()

        async def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, rss_bytes())
                await asyncio.sleep(0.02)

        sampler = asyncio.create_task(sample())
        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(runs)))
        elapsed = time.perf_counter() - start
        done.set()
        await sampler
        peak = max(peak, rss_bytes())
    latencies.sort()
    count = len(latencies)
    assert count == runs * n_text, (count, runs * n_text)
    return {
        "runs": runs,
        "events": count,
        "seconds": elapsed,
        "events_per_s": count / elapsed,
        "runs_per_s": runs / elapsed,
        "p50_ms": latencies[count // 2] / 1e6,
        "p99_ms": latencies[min(count - 1, int(count * 0.99))] / 1e6,
        "rss_growth_mb": (peak - rss0) / 2**20,
    }


# ------------------------------------------------------------------ main


async def main(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    n_text, n_tool = (1_000, 20) if quick else (10_000, 200)
    repeats = 2 if quick else 5
    conc_rounds = 1 if quick else 2
    conc_levels = (1, 100, 1000)
    conc_text, burst, ms = (20, 5, 10) if quick else (100, 10, 10)
    versions = peer_versions()
    notes: list[str] = []
    if versions["litellm"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quiet_litellm()
    server = Server()
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        ),
        "mode": "quick" if quick else "full",
        "stream": {"text_deltas": n_text, "tool_fragments": n_tool},
        "versions": {**versions, "httpx": httpx.__version__},
        "memory": "tracemalloc peak of one run (Python allocations, client process)",
        "streams": {},
        "sansio": {},
        "notes": notes,
    }
    try:
        async with httpx.AsyncClient(timeout=httpx.Timeout(120.0)) as http:
            for protocol in PROTOCOLS:
                base = server.base(protocol, n_text, n_tool)
                path, _, _ = request_path(protocol)
                figures: list[Figure] = []
                raw_path = f"/s/{protocol}/{n_text}/{n_tool}{path}"
                figures.append(
                    await measure(
                        "server floor (raw socket)",
                        lambda raw_path=raw_path: raw_socket_run(server.port, raw_path),
                        repeats,
                        memory=False,
                    )
                )
                figures.append(
                    await measure(
                        "floor: httpx+httpx-sse+json.loads",
                        lambda base=base, protocol=protocol: floor_run(http, base, protocol),
                        repeats,
                    )
                )
                model = zett_model(base, protocol, http)
                figures.append(
                    await measure("zett Model.stream()", lambda m=model: zett_model_run(m), repeats)
                )
                figures.append(
                    await measure(
                        "zett agent.stream() (tool + answer)",
                        lambda m=model: zett_agent_run(m),
                        repeats,
                    )
                )
                if protocol in ("openai-chat", "anthropic"):
                    figures += await peer_figures(
                        protocol, base, http, repeats, versions, notes, memory=not quick
                    )
                result["streams"][protocol] = [f.__dict__ for f in figures]
                result["sansio"][protocol] = sansio_figures(protocol, n_text, n_tool, repeats * 2)
        conc: dict[str, Any] = {}
        for runs in conc_levels:
            rounds: dict[str, list[dict[str, Any]]] = {"floor": [], "zett": []}
            for _ in range(conc_rounds):  # alternating rounds; the best of each is kept
                for kind in ("floor", "zett"):
                    rounds[kind].append(await concurrent(server, kind, runs, conc_text, burst, ms))
            floor, zett = (max(rounds[k], key=lambda r: r["events_per_s"]) for k in rounds)
            conc[str(runs)] = {
                "floor": floor,
                "zett": zett,
                "throughput_ratio": floor["events_per_s"] / zett["events_per_s"],
                "p50_added_ms": zett["p50_ms"] - floor["p50_ms"],
                "p99_added_ms": zett["p99_ms"] - floor["p99_ms"],
            }
        result["concurrency"] = {
            "stream": {"text_deltas": conc_text, "burst": burst, "every_ms": ms},
            "levels": conc,
        }
    finally:
        server.close()
    result["ratios"] = ratios(result)
    return result


async def peer_figures(
    protocol: str,
    base: str,
    http: httpx.AsyncClient,
    repeats: int,
    versions: dict[str, str | None],
    notes: list[str],
    memory: bool,
) -> list[Figure]:
    out: list[Figure] = []
    if versions["pydantic-ai-slim"]:
        try:
            model = pydantic_ai_model(protocol, base)
            out.append(
                await measure(
                    "pydantic-ai model_request_stream",
                    lambda: pydantic_ai_model_run(model),
                    repeats,
                )
            )
            out.append(
                await measure(
                    "pydantic-ai agent.iter (tool + answer)",
                    lambda: pydantic_ai_agent_run(model),
                    repeats,
                    memory=memory,
                )
            )
        except Exception as error:  # a peer that fails is reported, not fatal
            notes.append(f"pydantic-ai on {protocol} failed: {type(error).__name__}: {error}")
    else:
        notes.append(
            "pydantic-ai-slim is not installed: skipped (pip install -r bench/requirements.txt)"
        )
    if versions["litellm"]:
        try:
            out.append(
                await measure(
                    "litellm acompletion + stream_chunk_builder",
                    lambda: litellm_run(protocol, base),
                    repeats,
                    memory=memory,
                )
            )
        except Exception as error:
            notes.append(f"litellm on {protocol} failed: {type(error).__name__}: {error}")
    else:
        notes.append("litellm is not installed: skipped (pip install -r bench/requirements.txt)")
    return out


def _seconds(result: dict[str, Any], protocol: str, prefix: str) -> float | None:
    for figure in result["streams"].get(protocol, []):
        if figure["name"].startswith(prefix):
            return figure["seconds"]  # type: ignore[no-any-return]
    return None


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    """Client CPU time ratios (< 1: zett is faster). Headline: the OpenAI-chat stream."""
    out: dict[str, Any] = {}
    for protocol in PROTOCOLS:
        zett = _seconds(result, protocol, "zett Model")
        agent = _seconds(result, protocol, "zett agent")
        floor = _seconds(result, protocol, "floor")
        out[protocol] = {
            "zett_vs_floor": _ratio(zett, floor),
            "zett_agent_vs_floor": _ratio(agent, floor),
            "zett_vs_pydantic_ai": _ratio(zett, _seconds(result, protocol, "pydantic-ai model")),
            "zett_agent_vs_pydantic_ai_agent": _ratio(
                agent, _seconds(result, protocol, "pydantic-ai agent")
            ),
            "zett_vs_litellm": _ratio(zett, _seconds(result, protocol, "litellm")),
        }
    head = out["openai-chat"]
    conc = result.get("concurrency", {}).get("levels", {})
    return {
        "zett_vs_floor": head["zett_vs_floor"],
        "zett_vs_pydantic_ai": head["zett_vs_pydantic_ai"],
        "zett_vs_litellm": head["zett_vs_litellm"],
        "by_protocol": out,
        "sansio_decoder_vs_json_loads": {
            p: round(v["ratio"], 3) for p, v in result["sansio"].items()
        },
        "concurrency": {
            runs: {
                "zett_vs_floor_time": round(level["throughput_ratio"], 3),
                "p50_added_ms": round(level["p50_added_ms"], 2),
                "p99_added_ms": round(level["p99_added_ms"], 2),
                "zett_events_per_s": round(level["zett"]["events_per_s"]),
                "zett_rss_growth_mb": round(level["zett"]["rss_growth_mb"], 1),
            }
            for runs, level in conc.items()
        },
    }


def print_tables(result: dict[str, Any]) -> None:
    print(f"zett-agent bench, {result['mode']} — {result['date']} — {result['machine']}")
    s = result["stream"]
    print(f"stream: {s['text_deltas']} text deltas + {s['tool_fragments']} tool-call fragments")
    print(f"versions: {result['versions']}; memory = {result['memory']}\n")
    for protocol, figures in result["streams"].items():
        floor = _seconds(result, protocol, "floor")
        zett = _seconds(result, protocol, "zett Model")
        print(f"[{protocol}]")
        print(
            f"  {'client':46} {'CPU ms':>8} {'wall ms':>8} {'/floor':>7} {'zett/it':>8} "
            f"{'peak MB':>8} {'events':>7}"
        )
        for f in figures:
            ms = f"{f['seconds'] * 1000:8.1f} {f['wall_seconds'] * 1000:8.1f}"
            vs_floor = f["seconds"] / floor if floor else float("nan")
            zett_vs = zett / f["seconds"] if zett and not f["name"].startswith("zett") else None
            peak = f"{f['peak_bytes'] / 2**20:8.2f}" if f["peak_bytes"] is not None else "       -"
            zv = f"{zett_vs:8.2f}" if zett_vs is not None else "       -"
            print(f"  {f['name']:46} {ms} {vs_floor:7.2f} {zv} {peak} {f['events']:7}")
        print()
    print("[sans-IO decoders on in-memory events]")
    for protocol, v in result["sansio"].items():
        print(
            f"  {protocol:12} json.loads {v['json.loads'] * 1000:7.1f} ms   decoder "
            f"{v['decoder'] * 1000:7.1f} ms   ratio {v['ratio']:.2f}   "
            f"+{v['decoder_us_per_event']:.2f} µs/event"
        )
    conc = result.get("concurrency")
    if conc:
        c = conc["stream"]
        print(
            f"\n[concurrency: OpenAI-chat, {c['text_deltas']} deltas/run, {c['burst']} every "
            f"{c['every_ms']} ms; latency = receipt - server write]"
        )
        print(
            f"  {'runs':>5} {'client':6} {'events/s':>9} {'runs/s':>8} {'p50 ms':>8} "
            f"{'p99 ms':>8} {'RSS +MB':>8}"
        )
        for runs, level in conc["levels"].items():
            for kind in ("floor", "zett"):
                v = level[kind]
                print(
                    f"  {runs:>5} {kind:6} {v['events_per_s']:9.0f} {v['runs_per_s']:8.1f} "
                    f"{v['p50_ms']:8.2f} {v['p99_ms']:8.2f} {v['rss_growth_mb']:8.1f}"
                )
            print(
                f"  {'':>5} added: p50 {level['p50_added_ms']:+.2f} ms, p99 "
                f"{level['p99_added_ms']:+.2f} ms, time zett/floor {level['throughput_ratio']:.2f}"
            )
    r = result["ratios"]
    print("\n[ratios of client CPU time, < 1 means zett is faster; headline = OpenAI-chat]")
    print(
        f"  zett/floor {r['zett_vs_floor']}   zett/pydantic-ai {r['zett_vs_pydantic_ai']}   "
        f"zett/litellm {r['zett_vs_litellm']}"
    )
    for protocol, v in r["by_protocol"].items():
        print(f"  {protocol:12} {v}")
    for note in result["notes"]:
        print(f"note: {note}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small streams, under a minute")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    result = asyncio.run(main(args))
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_tables(result)


if __name__ == "__main__":
    cli()
