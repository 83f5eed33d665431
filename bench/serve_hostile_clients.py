"""``zett serve`` against clients that try to hold it: does another chat still start?

Usage::

    python bench/serve_hostile_clients.py                # both parts
    python bench/serve_hostile_clients.py --big-body     # only the 100,000-part body
    python bench/serve_hostile_clients.py --stalled      # only the readers that never read
    python bench/serve_hostile_clients.py --smoke        # tiny (CI: the script runs)
    python bench/serve_hostile_clients.py --src DIR      # the server from another tree

Three kinds of process on 127.0.0.1: the replayed model (``bench/serve_load.py
--replay``: the replies of ``tests/serve_support.py``), the server (uvicorn, one
worker, this script with ``--serve``), and the clients (here; the big bodies from
a process of their own). The figure is an ordinary chat's **first output** (the
time from sending ``POST /api/chat`` to its first ``text-delta``), the mean and the
worst of ``--chats`` chats one after another, measured in the same run

* alone (the baseline), and
* ``--big-body``: while another process posts, again and again, a chat body of
  100,000 tiny file parts (16.5 MiB, inside both byte limits); ``GET /api/info``
  is timed the same way;
* ``--stalled``: while 120 clients hold a chat each whose answer is 8 MB and read
  nothing (the server's ``slow_client_timeout`` 8 s, the model pool's default 100
  connections), the listening socket bound as that tree's ``zett serve`` binds it.

Printed: each mean, its worst, and their ratios to the baseline's mean, and the
first chat of each series (for ``--stalled`` the first wave: readers that never
read are told apart from readers only once the kernel's buffer for each is full).
A mean, not a median: a server held in bursts (one large body at a time) shows in
the mean and the worst, and a median of the chats between the bursts hides it.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path[:0] = [str(TESTS)]

PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def big_body(parts: int) -> bytes:
    from serve_support import chat_body

    body = chat_body("big", "look at these")
    body["messages"][0]["parts"] += [{"type": "file", "mediaType": "image/png", "url": PNG}] * parts
    return json.dumps(body).encode()


# ---------------------------------------------------------------- processes


def serve(port: int, replay_url: str, slow_client_timeout: float) -> None:
    import logging

    import uvicorn

    from serve_support import make_agent
    from zett_agent.serve import ServeSettings, create_app

    logging.getLogger("zett_agent.serve").setLevel(logging.ERROR)
    if os.environ.get("BENCH_LOG"):  # the cancellations, with their time
        logging.basicConfig(format="%(relativeCreated)8.0f %(message).150s", level=logging.WARNING)
        logging.getLogger("zett_agent.serve").setLevel(logging.WARNING)
    settings = ServeSettings(slow_client_timeout=slow_client_timeout)
    app = create_app(make_agent(replay_url), settings=settings, owns=True)
    # the listening socket as this tree's `zett serve` binds it
    from zett_agent.cli._serve import bind

    if "send_buffer" in inspect.signature(bind).parameters:
        from zett_agent.cli._serve import SEND_BUFFER_BYTES

        sock = bind("127.0.0.1", port, send_buffer=SEND_BUFFER_BYTES)
    else:
        sock = bind("127.0.0.1", port)
    config = uvicorn.Config(app, log_level="critical", backlog=4096)
    uvicorn.Server(config).run(sockets=[sock])


def poster(url: str, parts: int) -> None:
    """Post the big body again and again until killed; a line per post."""
    import httpx

    data = big_body(parts)
    headers = {"content-type": "application/json"}
    with httpx.Client(timeout=120) as client:
        print("ready", flush=True)
        while True:
            response = client.post(f"{url}/api/chat", content=data, headers=headers)
            print(response.status_code, flush=True)


def start(args: list[str], src: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{src}:{TESTS}"}
    return subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.PIPE, text=True)


def start_server(replay_url: str, src: Path, slow_client_timeout: float) -> tuple[Any, str]:
    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = start([__file__, "--serve", str(port), replay_url, str(slow_client_timeout)], src)
    url = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            httpx.get(f"{url}/api/info", timeout=1).raise_for_status()
            return process, url
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


# ---------------------------------------------------------------- clients


def first_output(client: Any, url: str, n: int) -> float:
    """Seconds from sending an ordinary chat to its first text-delta."""
    from serve_support import chat_body

    started = time.perf_counter()
    body = chat_body(f"probe{n}-{time.time_ns()}", f"hello {n}")
    with client.stream("POST", f"{url}/api/chat", json=body) as response:
        for line in response.iter_lines():
            if '"text-delta"' in line:
                return time.perf_counter() - started
    raise RuntimeError(f"chat {n}: no text ({response.status_code})")


def info_time(client: Any, url: str) -> float:
    started = time.perf_counter()
    client.get(f"{url}/api/info").raise_for_status()
    return time.perf_counter() - started


def series(url: str, chats: int, *, warm: bool = False) -> dict[str, float]:
    """``chats`` chats one after another, then as many ``GET /api/info``; ``warm``:
    one chat first, untimed (the baseline's model connection opened; under load the
    first chat is the figure that matters, so it is timed)."""
    import httpx

    with httpx.Client(timeout=120) as client:
        info_time(client, url)  # the connection to the server is open before anything
        if warm:
            first_output(client, url, -1)
        chat = [first_output(client, url, n) for n in range(chats)]
        info = [info_time(client, url) for _ in range(chats)]
    return {
        "first_output_s": statistics.mean(chat),
        "first_output_worst_s": max(chat),
        "first_output_first_s": chat[0],
        "info_s": statistics.mean(info),
        "info_worst_s": max(info),
        "info_first_s": info[0],
    }


def stalled_reader(url: str, n: int) -> socket.socket:
    """A chat whose answer is 8 MB (``flood``); the response is never read."""
    from serve_support import chat_body

    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    body = json.dumps(chat_body(f"stalled{n}", "flood")).encode()
    sock.sendall(
        f"POST /api/chat HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    return sock


def big_body_part(url: str, src: Path, chats: int, parts: int) -> dict[str, Any]:
    alone = series(url, chats, warm=True)
    process = start([__file__, "--poster", url, str(parts)], src)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        time.sleep(0.5)  # the first big body is on its way
        loaded = series(url, chats)
    finally:
        process.kill()
        process.wait(10)
    answers = [line.strip() for line in process.stdout or [] if line.strip()]
    return {"alone": alone, "loaded": loaded, "big_body_answers": answers[:5]}


def stalled_part(url: str, chats: int, readers: int) -> dict[str, Any]:
    alone = series(url, chats, warm=True)
    socks = [stalled_reader(url, n) for n in range(readers)]
    try:
        time.sleep(2.0)  # every stalled chat has its run, its queue full
        loaded = series(url, chats)
    finally:
        for sock in socks:
            sock.close()
    return {"alone": alone, "loaded": loaded}


def report(name: str, part: dict[str, Any]) -> None:
    alone, loaded = part["alone"], part["loaded"]
    for key, label in (
        ("first_output_s", "another chat's first output"),
        ("info_s", "GET /api/info"),
    ):
        base = alone[key]
        worst = loaded[key.replace("_s", "_worst_s")]
        first = loaded[key.replace("_s", "_first_s")]
        print(
            f"{name:9} {label:28} alone {base * 1000:7.1f} ms | loaded mean "
            f"{loaded[key] * 1000:8.1f} ms {loaded[key] / base:6.2f}x, worst "
            f"{worst * 1000:8.1f} ms {worst / base:7.1f}x, first {first * 1000:8.1f} ms"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big-body", action="store_true")
    parser.add_argument("--stalled", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--chats", type=int, default=9)
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    both = not args.big_body and not args.stalled
    chats = 3 if args.smoke else args.chats
    parts = 2_000 if args.smoke else 100_000
    readers = 5 if args.smoke else 120
    replay = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "serve_load.py"), "--replay"],
        env={**os.environ, "PYTHONPATH": f"{args.src}:{TESTS}"},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert replay.stdout is not None
    replay_url = replay.stdout.readline().strip()
    figures: dict[str, Any] = {"src": str(args.src)}
    try:
        if both or args.big_body:
            server, url = start_server(replay_url, args.src, 30.0)
            try:
                figures["big_body"] = big_body_part(url, args.src, chats, parts)
            finally:
                server.kill()
                server.wait(10)
        if both or args.stalled:
            server, url = start_server(replay_url, args.src, 8.0)
            try:
                figures["stalled"] = stalled_part(url, chats, readers)
            finally:
                server.kill()
                server.wait(10)
    finally:
        replay.kill()
        replay.wait(10)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"server from {args.src}; {chats} chats per series; {parts} parts; {readers} readers")
    for name in ("big_body", "stalled"):
        if name in figures:
            report(name, figures[name])
    if "big_body" in figures:
        print(f"big body answers: {figures['big_body']['big_body_answers']}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--poster":
        poster(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(main())
