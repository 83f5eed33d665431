"""What checking a history against the provider's rules costs per request
(``protocols/_sendable.py``: every assistant record checked before it is sent).

    python bench/history_check.py [--turns 200] [--rounds 7] [--repeat 20]

One Anthropic conversation of ``--turns`` answers, each with a signed thinking
block, a text block, an answered web search and a tool call (and its result),
encoded as the next request would be, in this process: "checked" is zett's
encoder as it is (every record passes its rules, each message once: its verdict
is kept with the message object); "unchecked" is the same encoder with the check
replaced by reading the record as it is (the baseline, measured in the same run);
"first" is the checked encoder on fresh message objects (every record checked
once, the cost of a history loaded from a store). The variants alternate,
``--repeat`` encodes per round; a figure is the median over the rounds: µs per
request and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from zett_agent import (  # noqa: E402
    AssistantMessage,
    StopInfo,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from zett_agent._exchange import ModelRequest, ToolSpec  # noqa: E402
from zett_agent.protocols import _anthropic, get_protocol  # noqa: E402
from zett_agent.vendors import get_vendor  # noqa: E402

ORIGIN = {"provider": "anthropic", "model": "m"}


def conversation(turns: int) -> list[Any]:
    messages: list[Any] = [UserMessage("start")]
    for n in range(turns):
        blocks = [
            {"type": "thinking", "thinking": "thinking " * 20, "signature": "c2ln" * 40},
            {"type": "text", "text": f"Answer {n}"},
            {"type": "server_tool_use", "id": f"srv{n}", "name": "web_search", "input": {"q": "x"}},
            {"type": "web_search_tool_result", "tool_use_id": f"srv{n}", "content": []},
            {"type": "tool_use", "id": f"c{n}", "name": "lookup", "input": {"k": n}},
        ]
        record = {"protocol": "anthropic", "content": blocks, "origin": ORIGIN}
        call = ToolCall(f"c{n}", "lookup", f'{{"k": {n}}}')
        stop = StopInfo(StopReason.MAX_OUTPUT) if n % 10 == 0 else None  # some "own" answers
        messages.append(AssistantMessage(f"Answer {n}", (call,), stop=stop, provider_record=record))
        messages.append(ToolResultMessage(f"c{n}", "lookup", "value"))
    messages.append(UserMessage("next"))
    return messages


def encode(messages: list[Any]) -> None:
    request = ModelRequest("m", messages, tools=[ToolSpec("lookup", "l", {"type": "object"})])
    get_protocol("anthropic").encode_request(request, get_vendor("anthropic"))


def timed(messages: list[Any], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        encode(messages)
    return (time.perf_counter() - start) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="tiny, one round")
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.rounds, args.repeat = 5, 1, 2
    checked_history = conversation(args.turns)
    encode(checked_history)  # the first request checks every message once
    real = _anthropic.sendable_record
    figures: dict[str, list[float]] = {"checked": [], "unchecked": [], "first": []}
    for _ in range(args.rounds):
        figures["checked"].append(timed(checked_history, args.repeat))
        _anthropic.sendable_record = lambda message, *_: message.provider_record  # type: ignore[assignment]
        try:
            figures["unchecked"].append(timed(checked_history, args.repeat))
        finally:
            _anthropic.sendable_record = real
        fresh = [conversation(args.turns) for _ in range(args.repeat)]
        start = time.perf_counter()
        for messages in fresh:
            encode(messages)
        figures["first"].append((time.perf_counter() - start) / args.repeat * 1e6)
    base = statistics.median(figures["unchecked"])
    print(f"anthropic history of {args.turns} answers ({2 * args.turns + 2} messages)")
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"  {name:9} {median:10.0f} µs per request   x{median / base:.2f} of unchecked")


if __name__ == "__main__":
    main()
