"""Run one model call in a fresh process and print what happened as one JSON line.

``python client.py SRC URL PROVIDER OPTIONS_JSON``: SRC is the ``src`` folder to
import zett_agent from (so a run can measure another checkout), OPTIONS_JSON the
Model options (``limits`` as a dict of ReadLimits fields). Printed: the outcome
(an error's type, limit, retryable, message; or a response's stop), the peak RSS
above the RSS before the call (MB, from /proc/self/status), the CPU time the call
took, and the longest CPU time the event loop's thread spent between two turns of
a heartbeat coroutine that sleeps 10 ms at a time. Both are CPU time of this
process (``time.thread_time`` / ``time.process_time``), not wall time: other
processes on a loaded machine delay the heartbeat's wake-up, but they cannot add
to what this thread computed without letting the loop run, which is what a
blocked loop is.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def _status(field: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise LookupError(field)


async def _main(url: str, provider: str, options: dict[str, Any]) -> dict[str, Any]:
    import anyio

    from zett_agent._exchange import ModelRequest
    from zett_agent._messages import UserMessage
    from zett_agent.model._model import Model

    limits = options.pop("limits", None)
    if limits is not None:
        from zett_agent.model._limits import ReadLimits

        options["limits"] = ReadLimits(**limits)
    model = Model(provider, "m", base_url=url, api_key="test-key", **options)
    request = ModelRequest("m", [UserMessage("hi")])
    base = _status("VmRSS")
    gap = 0.0
    done = False
    outcome: dict[str, Any] = {}

    async def heartbeat() -> None:
        nonlocal gap
        last = time.thread_time()
        while not done:
            await anyio.sleep(0.01)
            now = time.thread_time()
            gap = max(gap, now - last)
            last = now

    start = time.process_time()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(heartbeat)
        try:
            response = await model.complete(request)
            info = response.stop_info
            outcome = {"kind": "stop", "reason": info.reason.value, "detail": dict(info.detail)}
        except Exception as error:
            outcome = {
                "kind": "error",
                "type": type(error).__name__,
                "limit": getattr(error, "limit", None),
                "retryable": getattr(error, "retryable", None),
                "status": getattr(error, "status", None),
                "message": str(error)[:400],
            }
        elapsed = time.process_time() - start
        done = True
    await model.aclose()
    outcome.update(
        peak_mb=round(_status("VmHWM") - base, 1), seconds=round(elapsed, 2), max_gap=round(gap, 3)
    )
    return outcome


if __name__ == "__main__":
    src, url, provider, raw = sys.argv[1:5]
    sys.path.insert(0, src)
    import anyio

    print(json.dumps(anyio.run(_main, url, provider, json.loads(raw))))
