"""The model client's connection pool under N concurrent streams, transports side by side.

Usage::

    python bench/pool.py                     # 100 and 1,000 streams, 3 rounds
    python bench/pool.py --streams 100 --rounds 5
    python bench/pool.py --json

Each transport runs in a fresh process (``--client``), in rotation over the rounds,
against ``bench/server.py``'s paced OpenAI Chat stream (20 text deltas, 5 every
50 ms: a stream lasts ~150 ms, so all N are open at once). The process makes N
concurrent ``Model.stream()`` calls through one ``httpx.AsyncClient`` whose
transport is the candidate, twice: a **cold** wave (every connection is new) and a
**warm** wave (the pool's connections are reused); aiohttp is imported before
either wave for every candidate (its one-time import is not a pool's cost).
Printed per transport: the process's CPU per wave (``time.process_time``), time
to the first stream event p50/p99, the wave's wall time, each against httpx's
default transport measured in the same round. Candidates (each skipped with a
note when its package is absent):

=====================  ===========================================================
``httpx``              httpx's default transport (httpcore's pool)
``httpx-aiohttp``      ``httpx_aiohttp.AiohttpTransport`` 0.2.0 as published
``zett aiohttp``       zett's own transport over aiohttp's connector
                       (:mod:`zett_agent.model._pool`: the three fixes)
``httpcore2``          httpx with the pool of pydantic's httpcore fork (httpcore2)
``httpx per-host x10`` ten httpcore pools per host, each request on the least busy
=====================  ===========================================================
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
sys.path[:0] = [str(HERE), str(SRC)]

CANDIDATES = ("httpx", "httpx-aiohttp", "zett aiohttp", "httpcore2", "httpx per-host x10")
PATH = "/p/5/50/20"  # paced: 5 deltas every 50 ms, 20 deltas


# ---------------------------------------------------------------- candidate transports


def _httpcore2_transport(limits: Any) -> Any:
    """httpx's transport with httpcore2's pool (same request/response mapping)."""
    import contextlib

    import httpcore2
    import httpx

    exc_map = {
        httpcore2.PoolTimeout: httpx.PoolTimeout,
        httpcore2.ConnectTimeout: httpx.ConnectTimeout,
        httpcore2.ReadTimeout: httpx.ReadTimeout,
        httpcore2.WriteTimeout: httpx.WriteTimeout,
        httpcore2.TimeoutException: httpx.TimeoutException,
        httpcore2.ConnectError: httpx.ConnectError,
        httpcore2.ReadError: httpx.ReadError,
        httpcore2.WriteError: httpx.WriteError,
        httpcore2.RemoteProtocolError: httpx.RemoteProtocolError,
        httpcore2.LocalProtocolError: httpx.LocalProtocolError,
        httpcore2.ProtocolError: httpx.ProtocolError,
        httpcore2.NetworkError: httpx.NetworkError,
    }

    @contextlib.contextmanager
    def mapped() -> Any:
        try:
            yield
        except Exception as exc:
            for source, target in exc_map.items():
                if isinstance(exc, source):
                    raise target(str(exc)) from exc
            raise

    class Stream(httpx.AsyncByteStream):
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        async def __aiter__(self) -> Any:
            with mapped():
                async for part in self._stream:
                    yield part

        async def aclose(self) -> None:
            await self._stream.aclose()

    class Transport(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self._pool = httpcore2.AsyncConnectionPool(
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
            )

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            req = httpcore2.Request(
                method=request.method,
                url=httpcore2.URL(
                    scheme=request.url.raw_scheme,
                    host=request.url.raw_host,
                    port=request.url.port,
                    target=request.url.raw_path,
                ),
                headers=request.headers.raw,
                content=request.stream,
                extensions=request.extensions,
            )
            with mapped():
                resp = await self._pool.handle_async_request(req)
            return httpx.Response(
                status_code=resp.status,
                headers=resp.headers,
                stream=Stream(resp.stream),
                extensions=resp.extensions,
            )

        async def aclose(self) -> None:
            await self._pool.aclose()

    return Transport()


def _sharded_transport(limits: Any, shards: int = 10) -> Any:
    """``shards`` httpcore pools for one host; a request goes to the least busy."""
    import httpx

    each = httpx.Limits(
        max_connections=max(1, (limits.max_connections or 1000) // shards),
        max_keepalive_connections=max(1, (limits.max_keepalive_connections or 100) // shards),
        keepalive_expiry=limits.keepalive_expiry,
    )

    class Stream(httpx.AsyncByteStream):
        def __init__(self, stream: Any, done: Any) -> None:
            self._stream, self._done = stream, done

        async def __aiter__(self) -> Any:
            async for part in self._stream:
                yield part

        async def aclose(self) -> None:
            try:
                await self._stream.aclose()
            finally:
                self._done()

    class Transport(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self._pools = [httpx.AsyncHTTPTransport(limits=each) for _ in range(shards)]
            self._busy = [0] * shards

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            n = min(range(shards), key=self._busy.__getitem__)
            self._busy[n] += 1
            released = False

            def done() -> None:
                nonlocal released
                if not released:
                    released = True
                    self._busy[n] -= 1

            try:
                response = await self._pools[n].handle_async_request(request)
            except BaseException:
                done()
                raise
            assert isinstance(response.stream, httpx.AsyncByteStream)
            response.stream = Stream(response.stream, done)
            return response

        async def aclose(self) -> None:
            for pool in self._pools:
                await pool.aclose()

    return Transport()


def make_client(name: str, streams: int) -> Any:
    import httpx

    limits = httpx.Limits(max_connections=streams, max_keepalive_connections=streams)
    timeout = httpx.Timeout(240.0, connect=120.0)  # a busy machine: measure, never fail
    if name == "httpx":
        return httpx.AsyncClient(limits=limits, timeout=timeout)
    if name == "httpx-aiohttp":
        from httpx_aiohttp import AiohttpTransport

        return httpx.AsyncClient(transport=AiohttpTransport(limits=limits), timeout=timeout)
    if name == "zett aiohttp":
        from zett_agent.model import ModelTransport, shared_ssl_context

        transport = ModelTransport(limits=limits, ssl_context=shared_ssl_context())
        return httpx.AsyncClient(transport=transport, timeout=timeout)
    if name == "httpcore2":
        return httpx.AsyncClient(transport=_httpcore2_transport(limits), timeout=timeout)
    if name == "httpx per-host x10":
        return httpx.AsyncClient(transport=_sharded_transport(limits), timeout=timeout)
    raise ValueError(name)


def available(name: str) -> str | None:
    """Why ``name`` cannot run here, or None."""
    import importlib.util

    need = {
        "httpx-aiohttp": "httpx_aiohttp",
        "zett aiohttp": "aiohttp",
        "httpcore2": "httpcore2",
    }.get(name)
    if need and importlib.util.find_spec(need) is None:
        return f"{name}: package {need} not installed (bench/requirements.txt)"
    if name == "zett aiohttp" and importlib.util.find_spec("zett_agent.model._pool") is None:
        return f"{name}: zett_agent.model._pool not in this tree"
    return None


# ---------------------------------------------------------------- one client process


async def client_run(name: str, url: str, streams: int) -> dict[str, Any]:
    import importlib.util

    from zett_agent import ModelRequest, ModelResponse, UserMessage
    from zett_agent.model import Model

    if importlib.util.find_spec("aiohttp") is not None:
        import aiohttp  # noqa: F401  (imported before timing, for every candidate alike)
    http = make_client(name, streams)
    model = Model("openai", "m", base_url=url + PATH, api_key="bench", client=http, max_retries=0)
    request = ModelRequest("m", [UserMessage("hi")])

    async def one(firsts: list[float]) -> None:
        started = time.perf_counter()
        first = None
        final = None
        async for item in model.stream(request):
            if first is None:
                first = time.perf_counter() - started
            if isinstance(item, ModelResponse):
                final = item
        assert first is not None and final is not None and final.stop_info.ok, final
        firsts.append(first)

    waves: dict[str, Any] = {}
    for wave in ("cold", "warm"):
        firsts: list[float] = []
        cpu, wall = time.process_time(), time.perf_counter()
        async with asyncio.timeout(280):
            await asyncio.gather(*(one(firsts) for _ in range(streams)))
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        firsts.sort()
        waves[wave] = {
            "cpu_ms": cpu * 1000,
            "wall_ms": wall * 1000,
            "first_p50_ms": firsts[len(firsts) // 2] * 1000,
            "first_p99_ms": firsts[min(len(firsts) - 1, round(0.99 * (len(firsts) - 1)))] * 1000,
        }
    await http.aclose()
    return waves


# ---------------------------------------------------------------- the driver


def run_one(name: str, url: str, streams: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--client", name, "--url", url, "--streams", str(streams)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{name} at {streams}: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--streams", type=int, nargs="*", default=[100, 1000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--candidates", nargs="*", default=list(CANDIDATES))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        import resource

        _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        print(json.dumps(asyncio.run(client_run(args.client, args.url, args.streams[0]))))
        return 0
    notes = [why for why in map(available, args.candidates) if why]
    names = [n for n in args.candidates if available(n) is None]
    server = subprocess.Popen(
        [sys.executable, str(HERE / "server.py")], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    url = f"http://127.0.0.1:{int(server.stdout.readline())}"
    results: dict[int, dict[str, list[dict[str, Any]]]] = {}
    try:
        for level in args.streams:
            for round_ in range(args.rounds):
                order = names[round_ % len(names) :] + names[: round_ % len(names)]
                for name in order:
                    try:
                        got = run_one(name, url, level)
                    except (RuntimeError, subprocess.TimeoutExpired) as error:
                        notes.append(f"{name} at {level} streams failed: {error}"[:400])
                        continue
                    results.setdefault(level, {}).setdefault(name, []).append(got)
                    if not args.json:
                        print(f"  [{level} streams, round {round_ + 1}] {name}: done", flush=True)
    finally:
        server.terminate()
        server.wait(5)
    figures = reduce(results)
    out = {
        "load_average": os.getloadavg()[0],
        "path": PATH,
        "rounds": args.rounds,
        "notes": notes,
        "levels": figures,
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        report(out)
    return 0


def reduce(results: dict[int, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """Medians over the rounds, and per-round ratios to ``httpx`` (same round)."""
    out: dict[str, Any] = {}
    for level, by_name in results.items():
        base = by_name.get("httpx")
        rows: dict[str, Any] = {}
        for name, rounds in by_name.items():
            row: dict[str, Any] = {}
            for wave in ("cold", "warm"):
                figures = {
                    key: statistics.median(r[wave][key] for r in rounds)
                    for key in ("cpu_ms", "wall_ms", "first_p50_ms", "first_p99_ms")
                }
                if base is not None and len(base) == len(rounds):
                    figures["cpu_vs_httpx"] = statistics.median(
                        r[wave]["cpu_ms"] / b[wave]["cpu_ms"]
                        for r, b in zip(rounds, base, strict=True)
                    )
                    figures["p99_vs_httpx"] = statistics.median(
                        r[wave]["first_p99_ms"] / b[wave]["first_p99_ms"]
                        for r, b in zip(rounds, base, strict=True)
                    )
                row[wave] = figures
            rows[name] = row
        out[str(level)] = rows
    return out


def report(out: dict[str, Any]) -> None:
    print(
        f"pool bench: {out['rounds']} rounds, stream {out['path']}, "
        f"load average {out['load_average']:.1f}"
    )
    for note in out["notes"]:
        print(f"  note: {note}")
    for level, rows in out["levels"].items():
        print(f"\n[{level} concurrent Model.stream() calls, one httpx.AsyncClient]")
        print(
            f"  {'transport':20} {'wave':5} {'CPU ms':>9} {'x httpx':>8} {'first p50':>10} "
            f"{'first p99':>10} {'x httpx':>8} {'wall ms':>8}"
        )
        for name, row in rows.items():
            for wave, f in row.items():
                print(
                    f"  {name:20} {wave:5} {f['cpu_ms']:9.1f} {f.get('cpu_vs_httpx', 0):8.2f} "
                    f"{f['first_p50_ms']:10.1f} {f['first_p99_ms']:10.1f} "
                    f"{f.get('p99_vs_httpx', 0):8.2f} {f['wall_ms']:8.1f}"
                )


if __name__ == "__main__":
    sys.exit(main())
