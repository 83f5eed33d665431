"""zett-agent against the floors and the peers: client CPU, RSS, import time.

What it measures: the CPU time (and wall time, and Python memory peak) a client
spends reading one complete streamed model response -- request sent to final
response -- from a local stream server, for zett's ``Model.stream()`` and agent
run, a bare httpx + httpx-sse + ``json.loads`` loop (the floor), pydantic-ai and
LiteLLM; it prints each as a ratio to the floor and to zett measured in the same
run. It does not measure provider latency or the model.

Usage::

    python bench/run.py                 # full: 10,000-delta streams, 7 rounds (~15 min)
    python bench/run.py --quick         # 1,000-delta streams, 7 rounds
    python bench/run.py --smoke         # tiny streams, 1 round, no peers (CI: seconds)
    python bench/run.py --json          # one JSON object (keys in bench/README.md)
    python bench/run.py --plot FILE.svg # also draw the chart (matplotlib)

Every client reads the same bytes from ``bench/server.py`` (its own process, raw
asyncio, pre-built bytes) and runs in a fresh process (``bench/clients.py``), in
rotation over the rounds; figures are medians over the rounds with their spread,
ratios are medians of the per-round ratios (a client and its floor measured in the
same round). Peers run from their own virtualenvs (``--peers DIR``, default
``/work/bench-venvs`` or ``$ZETT_BENCH_VENVS``) and are skipped when absent. See
``bench/README.md`` for what each row does and what each key means.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SRC = HERE.parent / "src"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(SRC))

import streams  # noqa: E402

PROTOCOLS = ("anthropic", "openai-chat", "gemini")
PEER_PROTOCOLS = ("anthropic", "openai-chat")
FRAMINGS = ("event", "coalesced")
VENDOR = {"anthropic": "anthropic", "openai-chat": "openai", "gemini": "google"}


def _zett_floor() -> str:
    """The floor that frames SSE as zett's transport does and reads bytes through
    the same HTTP stack as zett's Model: httpx-sse's line iterator while the
    transport uses it, else the hand split of raw bytes; over zett's own pool
    (httpx's API over aiohttp's connector, ``zett_agent/model/_pool.py``) once Model uses it."""
    package = SRC / "zett_agent"
    transport = next(
        p for p in (package / "model" / "_transport.py", package / "transport.py") if p.exists()
    )
    if "httpx_sse" in transport.read_text():
        return "floor raw_decode"
    if (package / "model" / "_pool.py").exists() or (package / "pool.py").exists():
        return "floor pool bytes raw_decode"
    return "floor bytes raw_decode"


ZETT_FLOOR = _zett_floor()
ZETT_FLOOR2 = ZETT_FLOOR.replace("floor", "floor2", 1)

# client -> (virtualenv under --peers, or None for this Python; floor it is compared with)
CLIENTS: dict[str, tuple[str | None, str]] = {
    "raw socket": (None, "floor raw_decode"),
    "floor json.loads": (None, "floor raw_decode"),
    "floor raw_decode": (None, "floor raw_decode"),
    "floor2 json.loads": (None, "floor2 raw_decode"),
    "floor2 raw_decode": (None, "floor2 raw_decode"),
    "floor bytes raw_decode": (None, "floor raw_decode"),
    "floor2 bytes raw_decode": (None, "floor2 raw_decode"),
    "floor pool bytes raw_decode": (None, "floor bytes raw_decode"),
    "floor2 pool bytes raw_decode": (None, "floor2 bytes raw_decode"),
    "zett model": (None, ZETT_FLOOR),
    "zett agent": (None, ZETT_FLOOR2),
    "zett-0.2.1 model": ("zett-0.2.1", "floor raw_decode"),
    "zett-0.2.1 agent": ("zett-0.2.1", "floor2 raw_decode"),
    "pydantic-ai model": ("pydantic-ai", "floor json.loads"),
    "pydantic-ai agent": ("pydantic-ai", "floor2 json.loads"),
    "litellm model": ("litellm", "floor json.loads"),
}
OURS = [name for name, (venv, _) in CLIENTS.items() if venv is None]
PEERS = [name for name, (venv, _) in CLIENTS.items() if venv is not None]
PEER_PACKAGES = {
    "zett-0.2.1": "zett-agent==0.2.1",
    "pydantic-ai": "pydantic-ai-slim[openai,anthropic]==2.68.0",
    "litellm": "litellm==1.110.2",
}

MODES: dict[str, dict[str, Any]] = {
    "full": {
        "big": (10_000, 200),
        "small": (20, 2),
        "rounds": 7,
        "batches": 1,  # timed runs of the big stream per process, after a cold one
        "small_batches": 2,
        "small_per_batch": 30,
        "peer_batches": 1,
        "conc_levels": (1, 100, 1000),
        "conc_text": 100,
        "http_clients": 10,
        "startup_runs": 7,
        "peers": True,
    },
    "quick": {
        "big": (1_000, 20),
        "small": (20, 2),
        "rounds": 7,
        "batches": 3,
        "small_batches": 3,
        "small_per_batch": 50,
        "peer_batches": 1,
        "conc_levels": (1, 100, 1000),
        "conc_text": 20,
        "http_clients": 10,
        "startup_runs": 7,
        "peers": True,
    },
    "smoke": {
        "big": (100, 4),
        "small": (20, 2),
        "rounds": 1,
        "batches": 1,
        "small_batches": 1,
        "small_per_batch": 2,
        "peer_batches": 1,
        "conc_levels": (10,),
        "conc_text": 5,
        "http_clients": 2,
        "startup_runs": 1,
        "peers": False,
        "only": {"big": ("coalesced", "openai-chat"), "small": ("event", "anthropic")},
    },
}


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

    def base(self, framing: str, protocol: str, n_text: int, n_tool: int) -> str:
        return f"{self.url}/s/{framing}/{protocol}/{n_text}/{n_tool}"

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(5)


# ------------------------------------------------------------------ the floors' requests


def floor_requests(protocol: str, two: bool) -> list[list[Any]]:
    """The HTTP requests zett sends for one run, as ``[path, body, params]``: the
    first request; with ``two``, also the second one, which carries the tool result
    (the agent rows make both)."""
    from zett_agent import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
    from zett_agent._exchange import ModelRequest, ToolSpec
    from zett_agent.protocols import get_protocol
    from zett_agent.vendors import get_vendor

    wire, vendor = get_protocol(protocol), get_vendor(VENDOR[protocol])
    tool = ToolSpec(
        streams.TOOL_NAME,
        "Write a note.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )
    messages: list[Any] = [UserMessage("Write a note.")]
    out = []
    for _ in range(2 if two else 1):
        http = wire.encode_request(ModelRequest("m", list(messages), tools=[tool]), vendor)
        out.append([http.path, dict(http.body), dict(http.params)])
        call = ToolCall("call_1", streams.TOOL_NAME, '{"text": "abc"}')
        messages += [
            AssistantMessage(text="w0 ", tool_calls=[call]),
            ToolResultMessage("call_1", streams.TOOL_NAME, "wrote 3 characters"),
        ]
    return out


# ------------------------------------------------------------------ running clients


def peer_python(peers: Path, venv: str | None) -> str | None:
    if venv is None:
        return sys.executable
    python = peers / venv / "bin" / "python"
    return str(python) if python.exists() else None


def run_client(python: str, spec: dict[str, Any], timeout: float = 900) -> dict[str, Any]:
    proc = subprocess.run(
        [python, str(HERE / "clients.py"), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": ""},
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def summary(values: list[float]) -> dict[str, float]:
    """Median and spread (min, max; ``spread`` = (max - min) / median)."""
    med = statistics.median(values)
    return {
        "median": med,
        "min": min(values),
        "max": max(values),
        "spread": (max(values) - min(values)) / med if med else 0.0,
        "n": len(values),
    }


def wanted(size: str, framing: str, protocol: str, client: str, mode: dict[str, Any]) -> bool:
    """Whether a round measures ``client`` on this stream: the peers on the big
    coalesced stream of the protocols they speak; the fixed cost (small stream) for
    zett and its floors only; the two-request floors other than zett's only where
    the peers' agents are compared with them; ``--smoke``: one framing and protocol
    per stream size."""
    if mode.get("only") and (framing, protocol) != mode["only"][size]:
        return False
    if protocol not in mode.get("protocols", PROTOCOLS):
        return False
    if client in PEERS:
        return size == "big" and framing == "coalesced" and protocol in PEER_PROTOCOLS
    if size == "small":
        return client in ("zett model", "zett agent", ZETT_FLOOR, ZETT_FLOOR2)
    if client.startswith("floor2") and client != ZETT_FLOOR2:
        return client == "floor2 json.loads" and wanted(size, framing, protocol, PEERS[0], mode)
    return True


def streams_figures(
    server: Server, mode: dict[str, Any], peers: Path, notes: list[str], log: Any
) -> dict[str, Any]:
    """Every client in a fresh process, in rotation, over the rounds.

    Returns ``{set: {framing: {protocol: {client: per-round results}}}}`` where set
    is ``big`` (the long stream) or ``small`` (the 20-delta fixed-cost stream)."""
    jobs: list[tuple[str, str, str, str, str]] = []  # set, framing, protocol, client, python
    pythons: dict[str, str] = {}
    for client in CLIENTS:
        if client in PEERS and not mode["peers"]:
            note = "peers not run (--smoke or --no-peers): zett and the floors only"
            if note not in notes:
                notes.append(note)
            continue
        python = peer_python(peers, CLIENTS[client][0])
        if python is None:
            venv = CLIENTS[client][0]
            note = (
                f"{client}: no virtualenv at {peers / str(venv)}: skipped "
                f"(install: see bench/README.md, 'Peers')"
            )
            if note not in notes:
                notes.append(note)
            continue
        pythons[client] = python
    for size in ("big", "small"):
        for framing in FRAMINGS:
            for protocol in PROTOCOLS:
                for client in pythons:
                    if wanted(size, framing, protocol, client, mode):
                        jobs.append((size, framing, protocol, client, pythons[client]))
    requests = {(p, two): floor_requests(p, two) for p in PROTOCOLS for two in (False, True)}
    out: dict[str, Any] = {}
    failed: set[tuple[str, str, str, str]] = set()
    for round_ in range(mode["rounds"]):
        shift = (round_ * len(jobs)) // max(1, mode["rounds"])
        order = jobs[shift:] + jobs[:shift]  # rotate: no client always first or last
        log(f"round {round_ + 1}/{mode['rounds']}: {len(order)} processes")
        for size, framing, protocol, client, python in order:
            key = (size, framing, protocol, client)
            if key in failed:
                continue
            n_text, n_tool = mode[size]
            peer = client in PEERS
            spec: dict[str, Any] = {
                "client": client,
                "url": server.base(framing, protocol, n_text, n_tool),
                "protocol": protocol,
                "vendor": VENDOR[protocol],
                "requests": requests[(protocol, client.startswith("floor2"))],
                "batches": mode["peer_batches"]
                if peer
                else mode["batches" if size == "big" else "small_batches"],
                "per_batch": 1 if size == "big" else mode["small_per_batch"],
                "src": None if peer else str(SRC),
            }
            try:
                result = run_client(python, spec)
            except Exception as error:  # a peer that fails is reported, not fatal
                if not peer:
                    raise
                failed.add(key)
                notes.append(f"{client} on {protocol} ({framing}) failed: {error}")
                continue
            bucket = out.setdefault(size, {}).setdefault(framing, {}).setdefault(protocol, {})
            bucket.setdefault(client, []).append(result)
    return out


def reduce_streams(raw: dict[str, Any]) -> dict[str, Any]:
    """Per client: CPU ms (median of each process's batches, then over the rounds),
    RSS, and the per-round ratio to its floor."""
    out: dict[str, Any] = {}
    for size, framings in raw.items():
        for framing, protocols in framings.items():
            for protocol, clients in protocols.items():
                rows = {}
                for client, rounds in clients.items():
                    cpu = [statistics.median(r["cpu"]) * 1000 for r in rounds]
                    wall = [statistics.median(r["wall"]) * 1000 for r in rounds]
                    row: dict[str, Any] = {
                        "cpu_ms": summary(cpu),
                        "wall_ms": summary(wall),
                        "events": rounds[0]["events"],
                        "rss_import_mb": summary([r["rss_import_mb"] for r in rounds]),
                        "rss_run_mb": summary([r["rss_run_mb"] for r in rounds]),
                    }
                    floor = CLIENTS[client][1]
                    if floor in clients and floor != client:
                        paired = [
                            a / b
                            for a, b in zip(
                                cpu,
                                [statistics.median(r["cpu"]) * 1000 for r in clients[floor]],
                                strict=False,
                            )
                        ]
                        row["vs_floor"] = {"floor": floor, **summary(paired)}
                    rows[client] = row
                out.setdefault(size, {}).setdefault(framing, {})[protocol] = rows
    return out


# ------------------------------------------------------------------ start-up


IMPORTS = {
    "import_zett_agent_ms": "import zett_agent",
    "import_for_agent_ms": "from zett_agent import Model, create_agent, AgentEventType",
    "import_deps_ms": "import httpx, httpx_sse, pydantic, anyio",
}


def _importtime(statement: str, env: dict[str, str]) -> tuple[float, set[str]]:
    """Microseconds -> ms of ``-X importtime`` for ``statement``: the sum of the
    top-level imports' cumulative times (a lazily exported name's module is one of
    them), and the top-level packages imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    total, names = 0, set()
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if m:
            names.add(m.group(4).split(".")[0])
            if len(m.group(3)) == 1:
                total += int(m.group(2))
    return total / 1000, names


def importtime_figures(runs: int) -> dict[str, Any]:
    """Each statement of :data:`IMPORTS` by ``-X importtime``, less what ``pass``
    imports (site, encodings), in rotation over ``runs`` fresh interpreters."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    values: dict[str, list[float]] = {key: [] for key in IMPORTS}
    heavy: dict[str, set[str]] = {key: set() for key in IMPORTS}
    for _ in range(runs):
        base, _names = _importtime("pass", env)
        for key, statement in IMPORTS.items():
            ms, names = _importtime(statement, env)
            values[key].append(ms - base)
            heavy[key] |= names & {"rich", "click", "typer", "pygments", "opentelemetry", "sqlite3"}
    return {
        key: {**summary(v), "statement": IMPORTS[key], "notable_modules": sorted(heavy[key])}
        for key, v in values.items()
    }


def wall_ms(argv: list[str], runs: int, env: dict[str, str]) -> dict[str, float]:
    values = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, env=env, check=True)
        values.append((time.perf_counter() - start) * 1000)
    return summary(values)


def startup_figures(runs: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    zett_help = [
        sys.executable,
        "-c",
        "import sys; from zett_agent.cli import app; sys.argv = ['zett', '--help']; app()",
    ]
    return {
        **importtime_figures(runs),
        "python_startup_ms": wall_ms([sys.executable, "-c", "pass"], runs, env),
        "zett_help_ms": wall_ms(zett_help, runs, env),
    }


# ------------------------------------------------------------------ concurrency


def concurrency_figures(server: Server, mode: dict[str, Any], log: Any) -> dict[str, Any]:
    """Per level: client CPU of ``runs`` paced streams (spread over several httpx
    clients), floor against zett ``agent.stream()``, each in a fresh process."""
    n_text, burst, ms = mode["conc_text"], 10, 10
    base = f"{server.url}/p/{burst}/{ms}/{n_text}"
    request = floor_requests("openai-chat", False)
    levels: dict[str, Any] = {}
    for round_ in range(mode["rounds"]):
        log(f"concurrency round {round_ + 1}/{mode['rounds']}")
        for runs in mode["conc_levels"]:
            kinds = ("floor", "zett") if round_ % 2 == 0 else ("zett", "floor")
            for kind in kinds:
                spec = {
                    "client": kind,
                    "url": base,
                    "vendor": "openai",
                    "requests": request,
                    "runs": runs,
                    "http_clients": min(mode["http_clients"], runs),
                    "n_text": n_text,
                    "src": str(SRC),
                }
                result = run_client(sys.executable, spec)
                levels.setdefault(str(runs), {}).setdefault(kind, []).append(result)
    out: dict[str, Any] = {
        "stream": {"text_deltas": n_text, "burst": burst, "every_ms": ms},
        "http_clients": mode["http_clients"],
        "levels": {},
    }
    for runs, kinds in levels.items():
        floor, zett = kinds["floor"], kinds["zett"]
        level: dict[str, Any] = {}
        for kind, rounds in kinds.items():
            level[kind] = {
                "cpu_ms": summary([r["cpu"][0] * 1000 for r in rounds]),
                "wall_ms": summary([r["wall"][0] * 1000 for r in rounds]),
                "p50_ms": summary([r["p50_ms"] for r in rounds]),
                "p99_ms": summary([r["p99_ms"] for r in rounds]),
                "rss_run_mb": summary([r["rss_run_mb"] for r in rounds]),
            }
        level["cpu_zett_vs_floor"] = summary(
            [z["cpu"][0] / f["cpu"][0] for z, f in zip(zett, floor, strict=True)]
        )
        level["p50_added_ms"] = (
            level["zett"]["p50_ms"]["median"] - level["floor"]["p50_ms"]["median"]
        )
        level["p99_added_ms"] = (
            level["zett"]["p99_ms"]["median"] - level["floor"]["p99_ms"]["median"]
        )
        out["levels"][runs] = level
    return out


# ------------------------------------------------------------------ sans-IO


def sansio_figures(protocol: str, n_text: int, n_tool: int, repeats: int) -> dict[str, Any]:
    """The protocol's decoder fed the events from memory, against ``raw_decode``
    (the parser it uses) and ``json.loads`` of the same events."""
    from zett_agent.protocols import get_protocol
    from zett_agent.vendors import get_vendor

    events = streams.build(protocol, n_text, n_tool)
    data = [d for _, d in events if d != "[DONE]"]
    named = [(e or "message", d) for e, d in events]
    wire, vendor = get_protocol(protocol), get_vendor(VENDOR[protocol])
    raw = json.JSONDecoder().raw_decode

    def decode() -> None:
        decoder = wire.decoder(vendor)
        feed = decoder.feed_sse
        for event, payload in named:
            feed(event, payload)
        assert decoder.finish().tool_calls

    def loads() -> None:
        for payload in data:
            json.loads(payload)

    def raw_decode() -> None:
        for payload in data:
            raw(payload)

    out: dict[str, Any] = {}
    for name, fn in (("json.loads", loads), ("raw_decode", raw_decode), ("decoder", decode)):
        fn()
        times = []
        for _ in range(repeats):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        out[name] = statistics.median(times)
    out["ratio"] = out["decoder"] / out["raw_decode"]
    out["decoder_us_per_event"] = (out["decoder"] - out["raw_decode"]) / len(named) * 1e6
    return out


# ------------------------------------------------------------------ ratios and targets


def _med(row: dict[str, Any] | None, key: str = "vs_floor") -> float | None:
    if row is None or key not in row:
        return None
    return round(row[key]["median"], 3)


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    s = result["streams"]
    out: dict[str, Any] = {
        "model_vs_floor": {},
        "model_vs_floor_json_loads": {},
        "model_vs_floor_httpx_sse": {},
        "floor_bytes_vs_httpx_sse": {},
        "agent_vs_floor": {},
        "model_fixed_cost_vs_floor": {},
        "agent_fixed_cost_vs_floor": {},
        "floor_json_loads_vs_raw_decode": {},
        "peers": {},
        "rss_run_mb": {},
        "rss_import_mb": {},
    }
    for framing in FRAMINGS:
        for key in out:
            out[key][framing] = {}
        for protocol in PROTOCOLS:
            big = s.get("big", {}).get(framing, {}).get(protocol, {})
            small = s.get("small", {}).get(framing, {}).get(protocol, {})

            def cpu(rows: dict[str, Any], name: str) -> float | None:
                return rows[name]["cpu_ms"]["median"] if name in rows else None

            out["model_vs_floor"][framing][protocol] = _med(big.get("zett model"))
            out["agent_vs_floor"][framing][protocol] = _med(big.get("zett agent"))
            out["model_fixed_cost_vs_floor"][framing][protocol] = _med(small.get("zett model"))
            out["agent_fixed_cost_vs_floor"][framing][protocol] = _med(small.get("zett agent"))
            zm, fj = cpu(big, "zett model"), cpu(big, "floor json.loads")
            out["model_vs_floor_json_loads"][framing][protocol] = (
                round(zm / fj, 3) if zm and fj else None
            )
            fs = cpu(big, "floor raw_decode")
            out["model_vs_floor_httpx_sse"][framing][protocol] = (
                round(zm / fs, 3) if zm and fs else None
            )
            out["floor_bytes_vs_httpx_sse"][framing][protocol] = _med(
                big.get("floor bytes raw_decode")
            )
            out["floor_json_loads_vs_raw_decode"][framing][protocol] = _med(
                big.get("floor json.loads")
            )
            peers: dict[str, float | None] = {}
            for ours, theirs in (
                ("zett model", "zett-0.2.1 model"),
                ("zett agent", "zett-0.2.1 agent"),
                ("zett model", "pydantic-ai model"),
                ("zett agent", "pydantic-ai agent"),
                ("zett model", "litellm model"),
            ):
                a, b = cpu(big, ours), cpu(big, theirs)
                if b is not None:
                    peers[f"{ours} / {theirs}"] = round(a / b, 3) if a else None
            if peers:
                out["peers"][framing][protocol] = peers
            out["rss_run_mb"][framing][protocol] = {
                name: round(row["rss_run_mb"]["median"], 1) for name, row in big.items()
            }
            out["rss_import_mb"][framing][protocol] = {
                name: round(row["rss_import_mb"]["median"], 1) for name, row in big.items()
            }
    for key in list(out):  # leave out what this mode did not measure
        out[key] = {
            f: {p: v for p, v in protocols.items() if v is not None and v != {}}
            for f, protocols in out[key].items()
        }
        out[key] = {f: v for f, v in out[key].items() if v}
    for key in IMPORTS:
        out[key] = round(result["startup"][key]["median"], 1)
    out["zett_help_ms"] = round(result["startup"]["zett_help_ms"]["median"], 1)
    out["concurrency_cpu_zett_vs_floor"] = {
        runs: round(level["cpu_zett_vs_floor"]["median"], 3)
        for runs, level in result["concurrency"]["levels"].items()
    }
    return out


def targets(result: dict[str, Any]) -> dict[str, Any]:
    """Each target of issue 17: the worst value measured, the limit, met or not."""
    r = result["ratios"]

    def worst(table: dict[str, dict[str, float | None]]) -> float | None:
        values = [v for p in table.values() for v in p.values() if v is not None]
        return max(values) if values else None

    rss_excess = []
    for framing in r["rss_run_mb"].values():
        for rows in framing.values():
            if "zett agent" in rows and ZETT_FLOOR2 in rows:
                rss_excess.append(rows["zett agent"] - rows[ZETT_FLOOR2])
    checks = {
        "agent_vs_floor": (worst(r["agent_vs_floor"]), 1.15),
        "agent_fixed_cost_vs_floor": (worst(r["agent_fixed_cost_vs_floor"]), 1.15),
        "model_vs_floor": (worst(r["model_vs_floor"]), 1.05),
        "import_zett_agent_ms": (r["import_zett_agent_ms"], 90.0),
        "zett_help_ms": (r["zett_help_ms"], 150.0),
        "agent_rss_run_minus_floor_mb": (max(rss_excess) if rss_excess else None, 10.0),
    }
    return {
        name: {"worst": value, "limit": limit, "met": value is not None and value <= limit}
        for name, (value, limit) in checks.items()
    }


# ------------------------------------------------------------------ main


def main(args: argparse.Namespace) -> dict[str, Any]:
    name = "smoke" if args.smoke else "quick" if args.quick else "full"
    mode = dict(MODES[name])
    if args.rounds:
        mode["rounds"] = args.rounds
    if args.no_peers:
        mode["peers"] = False
    if args.protocols:
        mode["protocols"] = tuple(args.protocols.split(","))
    peers = Path(args.peers)
    notes: list[str] = []

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    import httpx

    result: dict[str, Any] = {
        "zett_floor": {"model": ZETT_FLOOR, "agent": ZETT_FLOOR2},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": (
            f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.1f}"
        ),
        "mode": name,
        "rounds": mode["rounds"],
        "stream": {
            "big": {"text_deltas": mode["big"][0], "tool_fragments": mode["big"][1]},
            "small": {"text_deltas": mode["small"][0], "tool_fragments": mode["small"][1]},
            "coalesced_chunk_bytes": 4096,
        },
        "versions": {"httpx": httpx.__version__, "peers": PEER_PACKAGES},
        "notes": notes,
    }
    server = Server()
    try:
        raw = streams_figures(server, mode, peers, notes, log)
        result["streams"] = reduce_streams(raw)
        log("concurrency")
        result["concurrency"] = concurrency_figures(server, mode, log)
    finally:
        server.close()
    log("start-up and sans-IO")
    result["startup"] = startup_figures(mode["startup_runs"])
    n_text, n_tool = mode["big"]
    result["sansio"] = {
        p: sansio_figures(p, n_text, n_tool, max(3, mode["rounds"])) for p in PROTOCOLS
    }
    result["ratios"] = ratios(result)
    result["targets"] = targets(result)
    return result


def print_tables(result: dict[str, Any]) -> None:
    print(f"zett-agent bench, {result['mode']} — {result['date']} — {result['machine']}")
    st = result["stream"]
    print(
        f"streams: big {st['big']['text_deltas']} text deltas + {st['big']['tool_fragments']} "
        f"tool-call fragments; small {st['small']['text_deltas']} + "
        f"{st['small']['tool_fragments']}; framing 'event' = one HTTP chunk per SSE event, "
        f"'coalesced' = {st['coalesced_chunk_bytes']}-byte chunks"
    )
    print(
        f"{result['rounds']} rounds, each client in a fresh process; CPU = client process CPU "
        "per run, median over rounds [min-max]; x floor = median of per-round ratios; "
        "RSS = import, then peak growth of one run\n"
    )
    for size in ("big", "small"):
        for framing, protocols in result["streams"].get(size, {}).items():
            for protocol, rows in protocols.items():
                print(f"[{size} stream, {framing} framing, {protocol}]")
                print(
                    f"  {'client':24} {'CPU ms':>9} {'[min-max]':>17} {'x floor':>8} "
                    f"{'vs':>18} {'RSS imp':>8} {'RSS run':>8} {'events':>7}"
                )
                for client, row in rows.items():
                    c = row["cpu_ms"]
                    vs = row.get("vs_floor")
                    ratio = f"{vs['median']:8.3f} {vs['floor']:>18}" if vs else f"{'-':>8} {'':>18}"
                    span = f"[{c['min']:.2f}-{c['max']:.2f}]"
                    print(
                        f"  {client:24} {c['median']:9.2f} {span:>17} "
                        f"{ratio} {row['rss_import_mb']['median']:8.1f} "
                        f"{row['rss_run_mb']['median']:8.1f} {row['events']:7}"
                    )
                print()
    print("[sans-IO decoders on in-memory events, big stream]")
    for protocol, v in result["sansio"].items():
        print(
            f"  {protocol:12} json.loads {v['json.loads'] * 1000:7.1f} ms   raw_decode "
            f"{v['raw_decode'] * 1000:7.1f} ms   decoder {v['decoder'] * 1000:7.1f} ms   "
            f"decoder/raw_decode {v['ratio']:.2f}   +{v['decoder_us_per_event']:.2f} µs/event"
        )
    conc = result["concurrency"]
    c = conc["stream"]
    print(
        f"\n[concurrency: OpenAI-chat, {c['text_deltas']} deltas/run, {c['burst']} every "
        f"{c['every_ms']} ms, runs spread over up to {conc['http_clients']} httpx clients; "
        "client CPU of the whole batch; latency = receipt - server write]"
    )
    print(
        f"  {'runs':>5} {'client':6} {'CPU ms':>9} {'wall ms':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'RSS +MB':>8}"
    )
    for runs, level in conc["levels"].items():
        for kind in ("floor", "zett"):
            v = level[kind]
            print(
                f"  {runs:>5} {kind:6} {v['cpu_ms']['median']:9.1f} {v['wall_ms']['median']:9.1f} "
                f"{v['p50_ms']['median']:8.2f} {v['p99_ms']['median']:8.2f} "
                f"{v['rss_run_mb']['median']:8.1f}"
            )
        cz = level["cpu_zett_vs_floor"]
        print(
            f"  {'':>5} CPU zett/floor {cz['median']:.3f} [{cz['min']:.3f}-{cz['max']:.3f}], "
            f"added p50 {level['p50_added_ms']:+.2f} ms, p99 {level['p99_added_ms']:+.2f} ms"
        )
    s = result["startup"]
    print(f"\n[start-up: -X importtime less 'pass', median of {s['import_zett_agent_ms']['n']}]")
    for key in IMPORTS:
        v = s[key]
        print(
            f"  {v['statement']:58} {v['median']:7.1f} ms [{v['min']:.1f}-{v['max']:.1f}]"
            f"  {', '.join(v['notable_modules'])}"
        )
    print(
        f"  zett --help: {s['zett_help_ms']['median']:.0f} ms wall "
        f"(python -c pass: {s['python_startup_ms']['median']:.0f} ms)"
    )
    print("\n[ratios]")
    for key, value in result["ratios"].items():
        print(f"  {key}: {json.dumps(value)}")
    print("\n[targets of issue 17: worst value measured]")
    for key, t in result["targets"].items():
        print(
            f"  {key:32} {t['worst']!s:>8}  limit {t['limit']:<6} "
            f"{'met' if t['met'] else 'NOT met'}"
        )
    for note in result["notes"]:
        print(f"note: {note}")


def cli() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000-delta streams")
    parser.add_argument("--smoke", action="store_true", help="tiny, 1 round, seconds (CI)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plot", metavar="FILE.svg", help="draw the chart (matplotlib)")
    parser.add_argument("--rounds", type=int, help="override the mode's rounds")
    parser.add_argument("--no-peers", action="store_true", help="zett and the floors only")
    parser.add_argument("--protocols", help="comma-separated subset, e.g. openai-chat")
    parser.add_argument(
        "--peers",
        default=os.environ.get("ZETT_BENCH_VENVS", "/work/bench-venvs"),
        help="folder of the peers' virtualenvs (zett-0.2.1, pydantic-ai, litellm)",
    )
    parser.add_argument("--save", metavar="FILE.json", help="also write the JSON to a file")
    parser.add_argument(
        "--startup-only", action="store_true", help="only the import and --help figures (JSON)"
    )
    args = parser.parse_args()
    if args.startup_only:
        print(json.dumps(startup_figures(args.rounds or 7), indent=2))
        return
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    result = main(args)
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=2, default=str))
    if args.plot:
        import plot

        plot.draw(result, args.plot)
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        print_tables(result)


if __name__ == "__main__":
    cli()
