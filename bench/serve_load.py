"""``zett serve`` under load: N concurrent chats against a replayed model.

Usage::

    python bench/serve_load.py                       # 200 concurrent chats
    python bench/serve_load.py --chats 1000          # 1,000 (at most 5 minutes here)
    python bench/serve_load.py --model-pool httpx    # the model calls on httpx's own pool
    python bench/serve_load.py --smoke               # 20 chats, 2 slow clients (CI)
    python bench/serve_load.py --json                # one JSON object

Three processes on 127.0.0.1: the server (uvicorn, one worker) so its RSS is its
own, the replayed model (the replies of ``tests/serve_support.py``, routed by each
request's prompt, written by one asyncio loop), and the clients (here). The chats
cycle through five scenarios (refusal, cut-off, interruption with a withheld call,
a tool run, a cut tool call then a normal answer) and every one is checked for the
right ``data-stop``/``finishReason``; a wrong one fails the bench (exit 1).

Printed, each against a baseline measured in the same run:

* time to the response head (status line and headers: the server took the chat; the
  ``start`` chunk goes with the first part) and to the first model output chunk
  (first text, tool or ``data-stop`` chunk), p50/p99, against the same N chats run
  by ``AgentClient`` in this process with no HTTP (time to the first model event);
* server RSS at its peak during the load (``VmHWM``) against its RSS when idle, and
  that growth per open chat; the server's CPU seconds for the load;
* then slow clients (``--slow``, default 3) beside 20 ordinary chats: each sends a
  chat whose answer is 8 MB and then reads nothing; the server (``stream_buffer_bytes`` 64 KiB,
  ``slow_client_timeout`` 2 s here) must cancel each run with INTERRUPTED,
  ``detail["limit"] == "slow_client_timeout"``, while the other chats go on.

Where the machine has two cores or more the server is pinned to core 0 and this
process, its clients and the replayed model to the others (``taskset``-style
affinity; ``--no-pin`` to turn it off); the baseline runs on the server's core.
The open-files limit is raised to its hard limit; a limit too low for the chats
asked for stops the bench with a message saying so. Every loop is bounded: a chat
that has no answer within ``--timeout`` seconds fails the bench.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from serve_support import chat_body, read_chunks, scenario_reply  # noqa: E402
from zett_agent import AgentClient, AgentEventType  # noqa: E402
from zett_agent.testing import RecordedRequest  # noqa: E402

SCENARIOS: dict[str, tuple[str | None, str]] = {
    # prompt: (data-stop reason or None, finishReason)
    "please refuse": ("refusal", "content-filter"),
    "cut": ("max_output", "length"),
    "interrupt": ("interrupted", "interrupted"),
    "weather in Paris?": (None, "stop"),
    "cut-call": ("max_output", "stop"),
}
DELAY = 0.01  # seconds between replayed chunks: streams overlap as real ones do
SLOW_BUFFER = 64 * 1024  # the server's stream_buffer_bytes in this bench
SLOW_TIMEOUT = 2.0  # the server's slow_client_timeout in this bench
FDS_PER_CHAT = 4  # client socket, server socket, model connection (both ends)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for {pid}")


def route(request: Any) -> Any:
    return scenario_reply(request, delay=DELAY)


# ---------------------------------------------------------------- the server process


def model_client(pool: str, connections: int) -> httpx.AsyncClient | None:
    """``zett``: None (the Model makes its own client: zett's pool); ``httpx``: an
    httpx client on httpx's default transport, as a host could pass."""
    if pool == "zett":
        return None
    return httpx.AsyncClient(
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        timeout=httpx.Timeout(120.0, connect=60.0),
    )


def agent_for(replay_url: str, pool: str, connections: int) -> Any:
    """The agent of ``tests/serve_support.make_agent`` with a pool sized for the load."""
    from zett_agent import Agent, AgentRunConfig
    from zett_agent.demo_tools import get_time, get_weather
    from zett_agent.model import Model

    model = Model(
        "openai",
        "gpt-test",
        base_url=replay_url,
        api_key="test-key",
        max_retries=0,
        client=model_client(pool, connections),
        max_connections=connections,
        connect_timeout=60.0,
    )
    return Agent(model, AgentRunConfig("serve-test"), [get_weather, get_time])


def serve(port: int, replay_url: str, pool: str, connections: int) -> None:
    import copy
    import logging

    import uvicorn

    from zett_agent.serve import ServeSettings, create_app

    raise_open_files(0)
    settings = ServeSettings(stream_buffer_bytes=SLOW_BUFFER, slow_client_timeout=SLOW_TIMEOUT)
    app = create_app(agent_for(replay_url, pool, connections), settings=settings, owns=True)
    # a stalled client's run is cancelled on purpose here: zett logs it as a warning and
    # uvicorn (the response cut short) as an error; neither is news in this bench
    log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    log_config["loggers"]["uvicorn"]["level"] = "WARNING"
    log_config["loggers"]["uvicorn.error"]["level"] = "CRITICAL"
    log_config["loggers"]["uvicorn.access"]["level"] = "WARNING"
    logging.getLogger("zett_agent.serve").setLevel(logging.ERROR)
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        log_level=None,
        log_config=log_config,
        backlog=4096,
    )


def raise_open_files(chats: int) -> int:
    """Raise the open-files limit to its hard limit; SystemExit with a message when
    that is too low for ``chats`` chats. Returns the limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    need = chats * FDS_PER_CHAT + 100
    if hard != resource.RLIM_INFINITY and hard < need:
        raise SystemExit(
            f"serve_load: {chats} chats need about {need} open files (client, server and "
            f"model sockets); the hard limit here is {hard}: raise it (ulimit -Hn) or ask "
            f"for fewer chats"
        )
    return hard if hard != resource.RLIM_INFINITY else -1


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cores() -> tuple[set[int], set[int]] | None:
    """(the server's core, the others) when there are two or more, else None."""
    available = sorted(os.sched_getaffinity(0))
    if len(available) < 2:
        return None
    return {available[0]}, set(available[1:])


def replay() -> None:
    """The replayed model, in its own process: prints its URL, runs until killed.

    The same replies as ``ReplayServer(route=...)`` (``tests/serve_support.py``),
    written by one asyncio loop instead of a thread per connection, so that 1,000
    open streams do not make the model the bottleneck of the bench."""
    import asyncio

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        key, _, value = line.partition(":")
                        headers[key.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                reply = route(RecordedRequest(method, path, headers, body))
                out = [f"HTTP/1.1 {reply.status} OK", f"content-type: {reply.content_type}"]
                out += [f"{k}: {v}" for k, v in reply.headers.items()]
                out.append("transfer-encoding: chunked")
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode())
                for n, chunk in enumerate(reply.chunks):
                    if n and reply.delay:
                        await writer.drain()
                        await asyncio.sleep(reply.delay)
                    if chunk:
                        writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
        print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def start_replay() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--replay"],
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests'}"},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def start_server(
    replay_url: str, pool: str, connections: int, core: set[int] | None
) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), replay_url, pool, str(connections)],
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT / 'tests'}"},
    )
    if core is not None:
        os.sched_setaffinity(process.pid, core)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            httpx.get(f"{url}/api/info", timeout=1).raise_for_status()
            return process, url
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


# ---------------------------------------------------------------- the load


async def one_chat(url: str, n: int, out: list[dict[str, Any]]) -> None:
    """One chat over a raw socket (HTTP/1.1 by hand: a client library's own pool
    bookkeeping would be measured too), timing the first bytes of the answer."""
    prompt = list(SCENARIOS)[n % len(SCENARIOS)]
    body = json.dumps(
        {
            "id": f"load{n}",
            "messages": [
                {"id": f"u{n}", "role": "user", "parts": [{"type": "text", "text": prompt}]}
            ],
            "trigger": "submit-message",
        }
    ).encode()
    host, port = url.removeprefix("http://").split(":")
    head = (
        f"POST /api/chat HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    started = time.perf_counter()
    first: float | None = None
    output: float | None = None
    raw = b""
    stream = await anyio.connect_tcp(host, int(port))
    async with stream:
        await stream.send(head + body)
        while True:
            try:
                piece = await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                break
            now = time.perf_counter()
            raw += piece
            if first is None and b"\r\n\r\n" in raw:  # the response head
                first = now - started
            if output is None and any(
                marker in raw for marker in (b'"text-delta"', b'"tool-input-start"', b'"data-stop"')
            ):
                output = now - started
    status_line, _, rest = raw.partition(b"\r\n")
    _, _, payload = rest.partition(b"\r\n\r\n")
    assert first is not None and output is not None, raw[-500:]
    out.append(
        {
            "prompt": prompt,
            "status": int(status_line.split()[1]),
            "chunks": read_chunks(dechunk(payload).decode()),
            "first_chunk": first,
            "first_output": output,
            "total": time.perf_counter() - started,
        }
    )


def dechunk(data: bytes) -> bytes:
    """The body of an HTTP/1.1 chunked transfer."""
    body = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        body += data[:size]
        data = data[size + 2 :]
    return body


def check(result: dict[str, Any]) -> str | None:
    """Why ``result`` is wrong, or None."""
    want_stop, want_finish = SCENARIOS[result["prompt"]]
    chunks = result["chunks"]
    stops = [c["data"]["reason"] for c in chunks if c["type"] == "data-stop"]
    finish = [c.get("finishReason") for c in chunks if c["type"] == "finish"]
    if result["status"] != 200:
        return f"HTTP {result['status']}"
    if stops != ([want_stop] if want_stop else []):
        return f"{result['prompt']!r}: stops {stops}"
    if finish != [want_finish]:
        return f"{result['prompt']!r}: finish {finish}"
    if want_stop == "interrupted":
        withheld = next(c for c in chunks if c["type"] == "data-stop")["data"]["detail"]
        if withheld.get("withheld_tool_calls") != ["get_weather"] or any(
            c["type"].startswith("tool-") for c in chunks
        ):
            return "the withheld call was shown"
    return None


async def slow_chat(url: str, n: int, out: list[dict[str, Any]], limit: float) -> None:
    """A client that sends a chat whose answer is 8 MB (``flood``), reads the
    response head, then reads nothing; once the server frees the session, its
    stored answer is fetched: the run must have been cancelled for the slow client."""
    import asyncio
    import socket

    host, port = url.removeprefix("http://").split(":")
    chat_id = f"slow{n}"
    loop = asyncio.get_running_loop()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.setblocking(False)
    started = time.perf_counter()
    stored: dict[str, Any] = {}
    try:
        await loop.sock_connect(sock, (host, int(port)))
        body = json.dumps(chat_body(chat_id, "flood")).encode()
        head = (
            f"POST /api/chat HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n"
        ).encode()
        await loop.sock_sendall(sock, head + body)
        await loop.sock_recv(sock, 1024)  # the head; then nothing more is read
        async with httpx.AsyncClient(timeout=30) as client:
            with anyio.move_on_after(limit):
                while True:
                    await anyio.sleep(0.25)
                    stored = (await client.get(f"{url}/api/sessions/{chat_id}")).json()
                    if not stored.get("running", True):
                        break
    finally:
        sock.close()
    parts = stored.get("messages", [{}])[-1].get("parts", []) if stored else []
    stops = [p_["data"] for p_ in parts if p_.get("type") == "data-stop"]
    out.append(
        {
            "prompt": "flood",
            "slow": True,
            "stops": stops,
            "running": stored.get("running", True),
            "cancelled_after": time.perf_counter() - started,
        }
    )


def check_slow(result: dict[str, Any]) -> str | None:
    if result["running"]:
        return "a slow client's run was still running"
    stops = result["stops"]
    if len(stops) != 1 or stops[0]["reason"] != "interrupted":
        return f"a slow client's answer stopped with {stops}"
    if stops[0]["detail"].get("limit") != "slow_client_timeout":
        return f"a slow client's run stopped for {stops[0]['detail']}"
    return None


async def load(url: str, chats: int, limit: float) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with anyio.fail_after(limit):
        async with anyio.create_task_group() as group:
            for n in range(chats):
                group.start_soon(one_chat, url, n, results)
    return results


async def slow_load(
    url: str, slow: int, others: int, limit: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``slow`` clients that stop reading, beside ``others`` ordinary chats."""
    results: list[dict[str, Any]] = []
    slow_results: list[dict[str, Any]] = []
    with anyio.fail_after(limit):
        async with anyio.create_task_group() as group:
            for n in range(slow):
                group.start_soon(slow_chat, url, n, slow_results, limit)
            for n in range(others):
                group.start_soon(one_chat, url, 100_000 + n, results)
    return results, slow_results


async def direct(replay_url: str, chats: int, pool: str, limit: float) -> list[float]:
    """The baseline: the same chats by AgentClient here, no HTTP: seconds to the
    first model event (text, tool call or stop)."""
    agent = agent_for(replay_url, pool, chats)
    runner = AgentClient(agent)
    firsts: list[float] = []
    first_kinds = {
        AgentEventType.TEXT_DELTA,
        AgentEventType.TOOL_CALL_DELTA,
        AgentEventType.MODEL_COMPLETED,
    }

    async def one(n: int) -> None:
        prompt = list(SCENARIOS)[n % len(SCENARIOS)]
        started = time.perf_counter()
        first: float | None = None
        async for event in runner.stream(prompt, session_id=f"d{n}"):
            if first is None and event.type in first_kinds:
                first = time.perf_counter() - started
        assert first is not None
        firsts.append(first)

    with anyio.fail_after(limit):
        async with anyio.create_task_group() as group:
            for n in range(chats):
                group.start_soon(one, n)
    await agent.aclose()
    return firsts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--slow", type=int, default=3, help="clients that stop reading")
    parser.add_argument("--model-pool", choices=("zett", "httpx"), default="zett")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds for each phase")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the server to a core")
    parser.add_argument("--smoke", action="store_true", help="20 chats, 2 slow clients")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--replay", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1], args.serve[2], int(args.serve[3]))
        return 0
    if args.replay:
        raise_open_files(0)
        replay()
        return 0
    if args.smoke:
        args.chats, args.slow = 20, 2
    open_files = raise_open_files(args.chats + args.slow)
    pinned = None if args.no_pin else cores()
    connections = args.chats + args.slow
    replayer, replay_url = start_replay()
    try:
        if pinned is not None:
            os.sched_setaffinity(replayer.pid, pinned[1])
            os.sched_setaffinity(0, pinned[0])  # the baseline runs where the server will
        baseline = anyio.run(direct, replay_url, args.chats, args.model_pool, args.timeout)
        if pinned is not None:
            os.sched_setaffinity(0, pinned[1])
        process, url = start_server(
            replay_url, args.model_pool, connections, pinned[0] if pinned else None
        )
        try:
            idle_kb = rss_kb(process.pid)
            cpu_before = cpu_seconds(process.pid)
            started = time.perf_counter()
            results = anyio.run(load, url, args.chats, args.timeout)
            wall = time.perf_counter() - started
            server_cpu = cpu_seconds(process.pid) - cpu_before
            peak_kb = rss_kb(process.pid, "VmHWM")
            others = min(20, args.chats)
            beside, slow_results = anyio.run(slow_load, url, args.slow, others, args.timeout)
        finally:
            process.terminate()
            process.wait(10)
    finally:
        replayer.terminate()
        replayer.wait(10)
    wrong = [why for why in map(check, results + beside) if why]
    wrong += [why for why in map(check_slow, slow_results) if why]
    first = [r["first_chunk"] * 1000 for r in results]
    output = [r["first_output"] * 1000 for r in results]
    base = [t * 1000 for t in baseline]
    figures: dict[str, Any] = {
        "chats": args.chats,
        "completed": len(results),
        "slow_clients": args.slow,
        "slow_cancelled": sum(check_slow(r) is None for r in slow_results),
        "model_pool": args.model_pool,
        "pinned": pinned is not None,
        "open_files_limit": open_files,
        "load_average": os.getloadavg()[0],
        "wrong": wrong[:10],
        "wall_s": round(wall, 2),
        "server_cpu_s": round(server_cpu, 2),
        "first_chunk_ms": {"p50": percentile(first, 50), "p99": percentile(first, 99)},
        "first_output_ms": {"p50": percentile(output, 50), "p99": percentile(output, 99)},
        "baseline_first_output_ms": {"p50": percentile(base, 50), "p99": percentile(base, 99)},
        "server_rss_mb": {"idle": idle_kb / 1024, "peak": peak_kb / 1024},
        "server_rss_kb_per_chat": (peak_kb - idle_kb) / max(1, args.chats),
        "beside_slow_completed": len(beside),
        "slow_cancelled_after_s": {
            "max": max((r["cancelled_after"] for r in slow_results), default=0.0)
        },
    }
    figures["ratios"] = {
        "first_output_p50_vs_direct": figures["first_output_ms"]["p50"]
        / figures["baseline_first_output_ms"]["p50"],
        "first_output_p99_vs_direct": figures["first_output_ms"]["p99"]
        / figures["baseline_first_output_ms"]["p99"],
        "rss_peak_vs_idle": peak_kb / idle_kb,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        report(figures)
    ok = (
        not wrong
        and len(results) == args.chats
        and len(slow_results) == args.slow
        and len(beside) == min(20, args.chats)
    )
    return 0 if ok else 1


def report(figures: dict[str, Any]) -> None:
    f, o, b, r = (
        figures["first_chunk_ms"],
        figures["first_output_ms"],
        figures["baseline_first_output_ms"],
        figures["server_rss_mb"],
    )
    ratio = figures["ratios"]
    chats = figures["chats"]
    pin = "server pinned to one core, clients on the other" if figures["pinned"] else "not pinned"
    print(
        f"zett serve: {chats} concurrent chats, "
        f"model pool {figures['model_pool']}, {pin}, load average {figures['load_average']:.1f}"
    )
    print(f"  {figures['completed']} completed in {figures['wall_s']:.2f} s")
    print(f"  right stops: {figures['completed'] - len(figures['wrong'])}/{figures['completed']}")
    print(f"  time to the response head      p50 {f['p50']:7.1f} ms   p99 {f['p99']:7.1f} ms")
    print(f"  time to first output chunk     p50 {o['p50']:7.1f} ms   p99 {o['p99']:7.1f} ms")
    print(f"  baseline: AgentClient, no HTTP p50 {b['p50']:7.1f} ms   p99 {b['p99']:7.1f} ms")
    print(
        f"  first output vs baseline: p50 {ratio['first_output_p50_vs_direct']:.2f}x, "
        f"p99 {ratio['first_output_p99_vs_direct']:.2f}x"
    )
    print(f"  server CPU: {figures['server_cpu_s']:.2f} s")
    print(
        f"  server RSS: idle {r['idle']:.1f} MB, peak {r['peak']:.1f} MB "
        f"({ratio['rss_peak_vs_idle']:.2f}x idle, {figures['server_rss_kb_per_chat']:.0f} KB "
        f"per open chat)"
    )
    print(
        f"  then {figures['slow_clients']} slow clients (8 MB answers, read nothing) beside "
        f"{figures['beside_slow_completed']} chats: {figures['slow_cancelled']} runs cancelled "
        f"with slow_client_timeout ({SLOW_TIMEOUT:g} s, buffer {SLOW_BUFFER // 1024} KiB), "
        f"the last {figures['slow_cancelled_after_s']['max']:.1f} s after its request"
    )
    for why in figures["wrong"]:
        print(f"  WRONG: {why}")


if __name__ == "__main__":
    sys.exit(main())
