"""``zett serve`` under load: N concurrent chats against a replayed model.

Usage::

    python bench/serve_load.py               # 200 concurrent chats
    python bench/serve_load.py --chats 50    # fewer
    python bench/serve_load.py --json        # one JSON object

Three processes on 127.0.0.1: the server (uvicorn, one worker) so its RSS is its
own, the replayed model (``ReplayServer`` routed by each request's prompt, not
served in order: ``tests/serve_support.py``), and the clients (here). The chats
cycle through five scenarios (refusal, cut-off, interruption with a withheld call,
a tool run, a cut tool call then a normal answer) and every one is checked for the
right ``data-stop``/``finishReason``; a wrong one fails the bench (exit 1).

Printed, each against a baseline measured in the same run:

* time to the response head (status line and headers: the server took the chat; the
  ``start`` chunk goes with the first part) and to the first model output chunk
  (first text, tool or ``data-stop`` chunk), p50/p99, against the same N chats run
  by ``AgentClient`` in this process with no HTTP (time to the first model event);
* server RSS at its peak during the load (``VmHWM``) against its RSS when idle.
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

from serve_support import make_agent, read_chunks, scenario_reply  # noqa: E402
from zett_agent.client import AgentClient  # noqa: E402
from zett_agent.events import AgentEventType  # noqa: E402
from zett_agent.testing import ReplayServer  # noqa: E402

SCENARIOS: dict[str, tuple[str | None, str]] = {
    # prompt: (data-stop reason or None, finishReason)
    "please refuse": ("refusal", "content-filter"),
    "cut": ("max_output", "length"),
    "interrupt": ("interrupted", "interrupted"),
    "weather in Paris?": (None, "stop"),
    "cut-call": ("max_output", "stop"),
}
DELAY = 0.01  # seconds between replayed chunks: streams overlap as real ones do


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


def serve(port: int, replay_url: str) -> None:
    import uvicorn

    from zett_agent.serve import create_app

    client = httpx.AsyncClient(
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=200),
        timeout=httpx.Timeout(60.0, connect=10.0),
    )
    app = create_app(make_agent(replay_url, client=client), owns=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", backlog=2048)


def replay() -> None:
    """The replayed model, in its own process: prints its URL, runs until killed."""
    with ReplayServer(route=route) as server:
        print(server.url, flush=True)
        while True:
            time.sleep(3600)


def start_replay() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--replay"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def start_server(replay_url: str) -> tuple[subprocess.Popen[bytes], str]:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(port), replay_url],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
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


async def load(url: str, chats: int) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    async with anyio.create_task_group() as group:
        for n in range(chats):
            group.start_soon(one_chat, url, n, results)
    return results


async def direct(replay_url: str, chats: int) -> list[float]:
    """The baseline: the same chats by AgentClient here, no HTTP: seconds to the
    first model event (text, tool call or stop)."""
    client = httpx.AsyncClient(limits=httpx.Limits(max_connections=1000), timeout=60)
    agent = make_agent(replay_url, client=client)
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

    async with anyio.create_task_group() as group:
        for n in range(chats):
            group.start_soon(one, n)
    await agent.aclose()
    return firsts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chats", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "REPLAY_URL"), help=argparse.SUPPRESS)
    parser.add_argument("--replay", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
        return 0
    if args.replay:
        replay()
        return 0
    replayer, replay_url = start_replay()
    try:
        baseline = anyio.run(direct, replay_url, args.chats)
        process, url = start_server(replay_url)
        try:
            idle_kb = rss_kb(process.pid)
            started = time.perf_counter()
            results = anyio.run(load, url, args.chats)
            wall = time.perf_counter() - started
            peak_kb = rss_kb(process.pid, "VmHWM")
        finally:
            process.terminate()
            process.wait(10)
    finally:
        replayer.terminate()
        replayer.wait(10)
    wrong = [why for why in map(check, results) if why]
    first = [r["first_chunk"] * 1000 for r in results]
    output = [r["first_output"] * 1000 for r in results]
    base = [t * 1000 for t in baseline]
    figures = {
        "chats": args.chats,
        "completed": len(results),
        "wrong": wrong[:10],
        "wall_s": round(wall, 2),
        "first_chunk_ms": {"p50": percentile(first, 50), "p99": percentile(first, 99)},
        "first_output_ms": {"p50": percentile(output, 50), "p99": percentile(output, 99)},
        "baseline_first_output_ms": {"p50": percentile(base, 50), "p99": percentile(base, 99)},
        "server_rss_mb": {"idle": idle_kb / 1024, "peak": peak_kb / 1024},
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
        f, o, b, r = (
            figures["first_chunk_ms"],
            figures["first_output_ms"],
            figures["baseline_first_output_ms"],
            figures["server_rss_mb"],
        )
        print(
            f"zett serve: {args.chats} concurrent chats, {len(results)} completed in {wall:.2f} s"
        )
        print(f"  right stops: {len(results) - len(wrong)}/{len(results)}")
        print(f"  time to the response head      p50 {f['p50']:7.1f} ms   p99 {f['p99']:7.1f} ms")
        print(f"  time to first output chunk     p50 {o['p50']:7.1f} ms   p99 {o['p99']:7.1f} ms")
        print(f"  baseline: AgentClient, no HTTP p50 {b['p50']:7.1f} ms   p99 {b['p99']:7.1f} ms")
        ratio = figures["ratios"]
        print(
            f"  first output vs baseline: p50 {ratio['first_output_p50_vs_direct']:.2f}x, "
            f"p99 {ratio['first_output_p99_vs_direct']:.2f}x"
        )
        print(
            f"  server RSS: idle {r['idle']:.1f} MB, peak {r['peak']:.1f} MB "
            f"({ratio['rss_peak_vs_idle']:.2f}x idle)"
        )
        for why in wrong[:10]:
            print(f"  WRONG: {why}")
    return 0 if not wrong and len(results) == args.chats else 1


if __name__ == "__main__":
    sys.exit(main())
