"""zett's stream overhead against its floor, quickly: the targets of issue 28, item 3.

Usage::

    python bench/overhead.py                  # 10,000 deltas, 5 rounds, three protocols
    python bench/overhead.py --rounds 9 --deltas 1000 --json
    python bench/overhead.py --src ../other-checkout/src --floor "floor bytes raw_decode"
    python bench/overhead.py --before /tmp/src-before   # that tree's rows in the same run

The subset of ``bench/run.py`` the targets need, in a few minutes: every client in a
fresh process (``bench/clients.py``), in rotation, over ``--rounds`` rounds, on the
big stream (N text deltas + a tool call in 200 fragments) in both framings for
Anthropic, OpenAI Chat and Gemini. Printed: the median per-round ratio of
``zett model`` (``Model.stream()``) to the floor, and of ``zett agent``
(``agent.stream()``, two requests and a tool) to the two-request floor. The floor is
the hand-split SSE + ``raw_decode`` floor over the HTTP stack zett's Model uses
(``floor pool bytes raw_decode``: httpx over ``zett_agent.model._pool``); ``--floor`` picks
another (``floor bytes raw_decode``: httpx's own pool, for a tree without pool.py).
Targets: 1.05 (model) and 1.15 (agent).

Measured in the same run, the **aiohttp floor** (``floor aiohttp json.loads``:
aiohttp's session straight, SSE split by hand per network chunk, ``json.loads``; its
``floor2`` makes the agent's two requests): the cheapest client on the same stack,
the one the issue-32 targets are against (``--deltas 20 --fragments 2
--per-batch 30``: model <= 1.1x, agent <= 1.3x; 10,000 deltas: 1.05x, 1.15x).
``--before SRC`` adds ``zett model``/``zett agent`` of another tree (a checkout's
``src`` before a change) to the same rotation, with their ratios to the same floors:
before and after measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402

TARGETS = {"zett model": 1.05, "zett agent": 1.15}
SHORT_TARGETS = {"zett model": 1.1, "zett agent": 1.3}
"""Against the aiohttp floor, for short requests (at most 100 deltas)."""
AIOHTTP_FLOOR = "floor aiohttp json.loads"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--fragments", type=int, default=200, help="tool-call fragments")
    parser.add_argument("--per-batch", type=int, default=1, help="runs per timed batch")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--src", default=str(HERE.parent / "src"), help="the zett tree measured")
    parser.add_argument(
        "--before",
        default="",
        help="another zett tree measured in the same run (its model and agent rows)",
    )
    parser.add_argument("--floor", default="floor pool bytes raw_decode")
    parser.add_argument("--protocols", default=",".join(run.PROTOCOLS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    floor, floor2 = args.floor, args.floor.replace("floor", "floor2", 1)
    protocols = args.protocols.split(",")
    afloor, afloor2 = AIOHTTP_FLOOR, AIOHTTP_FLOOR.replace("floor", "floor2", 1)
    clients: tuple[str, ...] = (floor, floor2, afloor, afloor2, "zett model", "zett agent")
    if args.before:
        clients += ("before model", "before agent")
    targets = SHORT_TARGETS if args.deltas <= 100 else TARGETS
    server = run.Server()
    cpu: dict[tuple[str, str, str], list[float]] = {}
    try:
        requests = {(p, two): run.floor_requests(p, two) for p in protocols for two in (0, 1)}
        jobs = [(f, p, c) for f in run.FRAMINGS for p in protocols for c in clients]
        for n in range(args.rounds):
            shift = n * len(jobs) // args.rounds
            for framing, protocol, client in jobs[shift:] + jobs[:shift]:
                spec = {
                    "client": client.replace("before", "zett"),
                    "url": server.base(framing, protocol, args.deltas, args.fragments),
                    "protocol": protocol,
                    "vendor": run.VENDOR[protocol],
                    "requests": requests[(protocol, int(client.startswith("floor2")))],
                    "batches": args.batches,
                    "per_batch": args.per_batch,
                    "src": args.before if client.startswith("before") else args.src,
                }
                result = run.run_client(sys.executable, spec)
                cpu.setdefault((framing, protocol, client), []).append(
                    statistics.median(result["cpu"]) * 1000
                )
    finally:
        server.close()
    out: dict[str, Any] = {
        "load_average": os.getloadavg()[0],
        "rounds": args.rounds,
        "deltas": args.deltas,
        "fragments": args.fragments,
        "floor": floor,
        "cpu_ms": {},
        "ratios": {},
        "ratios_aiohttp": {},
    }

    def ratio(framing: str, protocol: str, client: str, base: str) -> float:
        pairs = zip(cpu[(framing, protocol, client)], cpu[(framing, protocol, base)], strict=True)
        return round(statistics.median(a / b for a, b in pairs), 3)

    for framing in run.FRAMINGS:
        for protocol in protocols:
            key = f"{framing}.{protocol}"
            out["cpu_ms"][key] = {
                c: round(statistics.median(cpu[(framing, protocol, c)]), 3) for c in clients
            }
            out["ratios_aiohttp"][key] = {
                "zett model": ratio(framing, protocol, "zett model", afloor),
                "zett agent": ratio(framing, protocol, "zett agent", afloor2),
                "pool floor": ratio(framing, protocol, floor, afloor),
            }
            if args.before:
                out["ratios_aiohttp"][key]["before model"] = ratio(
                    framing, protocol, "before model", afloor
                )
                out["ratios_aiohttp"][key]["before agent"] = ratio(
                    framing, protocol, "before agent", afloor2
                )
            out["ratios"][key] = {
                c: round(
                    statistics.median(
                        a / b
                        for a, b in zip(
                            cpu[(framing, protocol, c)],
                            cpu[(framing, protocol, floor if c == "zett model" else floor2)],
                            strict=True,
                        )
                    ),
                    3,
                )
                for c in TARGETS
            }
    worst = {c: max(r[c] for r in out["ratios"].values()) for c in TARGETS}
    out["worst"] = worst
    out["met"] = {c: worst[c] <= limit for c, limit in TARGETS.items()}
    worst_a = {c: max(r[c] for r in out["ratios_aiohttp"].values()) for c in targets}
    out["worst_aiohttp"] = worst_a
    out["met_aiohttp"] = {c: worst_a[c] <= limit for c, limit in targets.items()}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"stream overhead: {args.deltas} deltas + {args.fragments} tool fragments, "
        f"{args.rounds} rounds, "
        f"floor '{floor}', load average {out['load_average']:.1f}"
    )
    print(
        f"  {'framing':9} {'protocol':12} {'floor ms':>9} {'model ms':>9} {'x':>6} "
        f"{'floor2 ms':>10} {'agent ms':>9} {'x':>6}"
    )
    for key, ms in out["cpu_ms"].items():
        framing, protocol = key.split(".")
        ratio = out["ratios"][key]
        print(
            f"  {framing:9} {protocol:12} {ms[floor]:9.1f} {ms['zett model']:9.1f} "
            f"{ratio['zett model']:6.3f} {ms[floor2]:10.1f} {ms['zett agent']:9.1f} "
            f"{ratio['zett agent']:6.3f}"
        )
    for client, limit in TARGETS.items():
        verdict = "met" if out["met"][client] else "NOT met"
        print(f"  {client}: worst {worst[client]:.3f}, target {limit}: {verdict}")
    print(f"  against '{afloor}' (agent: '{afloor2}'), the same run:")
    head = ("framing", "protocol", "floor ms", "model x", "agent x", "pool floor x")
    extra = ("before model x", "before agent x") if args.before else ()
    extras = "".join(f" {h:>15}" for h in extra)
    print("  {:9} {:12} {:>9} {:>8} {:>8} {:>13}".format(*head) + extras)
    for key, r in out["ratios_aiohttp"].items():
        framing, protocol = key.split(".")
        ms = out["cpu_ms"][key]
        line = (
            f"  {framing:9} {protocol:12} {ms[afloor]:9.2f} {r['zett model']:8.3f} "
            f"{r['zett agent']:8.3f} {r['pool floor']:13.3f}"
        )
        if args.before:
            line += f" {r['before model']:15.3f} {r['before agent']:15.3f}"
        print(line)
    for client, limit in targets.items():
        verdict = "met" if out["met_aiohttp"][client] else "NOT met"
        print(f"  {client}: worst {worst_a[client]:.3f}, target {limit}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
