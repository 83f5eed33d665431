"""What resumable streams cost (``ServeSettings(resumable=True)``).

Usage::

    python bench/resume.py            # 40 rejoins, a 2,000-word answer
    python bench/resume.py --json     # one JSON object
    python bench/resume.py --smoke    # a few rounds (CI: the bench must not rot)

A real uvicorn server on 127.0.0.1 and a replayed model (``tests/resume_support.py``
pacing) in this process's threads. Printed, each against a baseline measured in the
same run:

* **memory per running message**: the replay buffer's bytes at the end of an
  answer of N words in one step, against the bytes of the answer's text (what the
  run holds anyway), and the same for a two-step answer with a buffer bound
  smaller than the first step (the dropped step is rebuilt from the store);
* **added latency of a resume**: time to the first byte of ``GET
  /api/chat/{id}/stream`` mid-answer (the replay of the message so far), against
  ``GET /api/sessions/{id}`` at the same moment (the restore every reloading page
  does anyway), p50 and p90;
* **cost on a chat that is never resumed**: wall time of a whole chat with
  ``resumable`` on against off.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests")]

from resume_support import _chunk, _sse, _text, words  # noqa: E402
from serve_support import chat_body, make_agent, running_server  # noqa: E402
from zett_agent.serve import ServeSettings, create_app  # noqa: E402
from zett_agent.sessions import InMemorySessionStore  # noqa: E402
from zett_agent.testing import RecordedRequest, ReplayServer, Reply  # noqa: E402


def route(n_words: int, pace: float) -> Any:
    def reply(request: RecordedRequest) -> Reply:
        messages = request.json["messages"]
        if messages[-1]["role"] == "tool":
            return _sse(_text(words("after", n_words)), delay=pace)
        if "two" in str(messages[-1].get("content")):
            from resume_support import _call

            chunks = _text(words("before", n_words))[:-1]
            chunks += _call("call_1", "get_weather", ['{"city": "Paris"}'])
            chunks.append(_chunk({}, "tool_calls"))
            return _sse(chunks, delay=pace)
        return _sse(_text(words("word", n_words)), delay=pace)

    return reply


def app_for(url: str, settings: ServeSettings) -> Any:
    return create_app(make_agent(url), InMemorySessionStore(), settings, owns=True)


def whole_chat(base: str, chat_id: str, text: str) -> float:
    start = time.perf_counter()
    response = httpx.post(f"{base}/api/chat", json=chat_body(chat_id, text), timeout=120)
    response.raise_for_status()
    return time.perf_counter() - start


def first_byte(client: httpx.Client, url: str) -> float:
    start = time.perf_counter()
    with client.stream("GET", url) as response:
        next(response.iter_raw())
        return time.perf_counter() - start


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": 1000 * statistics.median(ordered),
        "p90_ms": 1000 * ordered[int(0.9 * (len(ordered) - 1))],
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--words", type=int, default=2000)
    parser.add_argument("--rejoins", type=int, default=40)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.smoke:
        args.words, args.rejoins = 200, 4
    pace = 0.002
    out: dict[str, Any] = {"words": args.words}
    with ReplayServer(route=route(args.words, pace)) as replay:
        on = app_for(replay.url, ServeSettings(resumable=True))
        small = app_for(replay.url, ServeSettings(resumable=True, resume_buffer_bytes=16_384))
        off = app_for(replay.url, ServeSettings())
        with running_server(on) as base, running_server(off) as plain:
            # memory per running message: peek at the buffer as the run ends
            state = on.state.zett
            whole_chat(base, "mem", "one step")
            buffer = state.live_runs["mem"].buffer
            text = len(words("word", args.words).encode())
            out["buffer_bytes_one_step"] = buffer.size
            out["text_bytes"] = text
            out["buffer_per_text_byte"] = buffer.size / text
            # the cost on a chat never resumed (baseline: resumable off)
            t_on = [whole_chat(base, f"on{k}", "one step") for k in range(3)]
            t_off = [whole_chat(plain, f"off{k}", "one step") for k in range(3)]
            out["chat_s_resumable"] = statistics.median(t_on)
            out["chat_s_plain"] = statistics.median(t_off)
            out["chat_time_ratio"] = out["chat_s_resumable"] / out["chat_s_plain"]
            # added latency of a resume, mid-answer
            runner = threading.Thread(target=whole_chat, args=(base, "lat", "one step"))
            runner.start()
            time.sleep(0.2)
            rejoin: list[float] = []
            restore: list[float] = []
            with httpx.Client(timeout=30) as client:
                for _ in range(args.rejoins):
                    if not runner.is_alive():
                        break
                    restore.append(first_byte(client, f"{base}/api/sessions/lat"))
                    rejoin.append(first_byte(client, f"{base}/api/chat/lat/stream"))
            runner.join()
            out["rejoins"] = len(rejoin)
            out["rejoin_first_byte"] = quantiles(rejoin)
            out["restore_first_byte"] = quantiles(restore)
            out["rejoin_per_restore_p50"] = (
                out["rejoin_first_byte"]["p50_ms"] / out["restore_first_byte"]["p50_ms"]
            )
        with running_server(small) as base:
            whole_chat(base, "two", "two steps")
            buffer = small.state.zett.live_runs["two"].buffer
            out["bound_bytes"] = buffer.limit
            out["steps_dropped"] = buffer.steps_dropped
            out["buffer_bytes_two_steps_bounded"] = buffer.size
            out["two_steps_text_bytes"] = 2 * text
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"answer of {args.words} words in one step ({out['text_bytes']} bytes of text):")
    print(
        f"  replay buffer at the end: {out['buffer_bytes_one_step']} bytes, "
        f"{out['buffer_per_text_byte']:.1f}x the text"
    )
    print(
        f"  two steps, bound {out['bound_bytes']} bytes: buffer "
        f"{out['buffer_bytes_two_steps_bounded']} bytes for {out['two_steps_text_bytes']} "
        f"bytes of text ({out['steps_dropped']} step(s) dropped: rebuilt from the store)"
    )
    r, s = out["rejoin_first_byte"], out["restore_first_byte"]
    print(
        f"resume mid-answer ({out['rejoins']} rejoins): first byte p50 {r['p50_ms']:.1f} ms, "
        f"p90 {r['p90_ms']:.1f} ms; GET /api/sessions p50 {s['p50_ms']:.1f} ms, "
        f"p90 {s['p90_ms']:.1f} ms: {out['rejoin_per_restore_p50']:.2f}x"
    )
    print(
        f"a whole chat never resumed: {out['chat_s_resumable']:.2f} s resumable, "
        f"{out['chat_s_plain']:.2f} s plain: {out['chat_time_ratio']:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
