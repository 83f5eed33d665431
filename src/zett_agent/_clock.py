"""The runtime's one clock for durations and deadlines: the event loop's.

Every limit, wait and duration the runtime measures reads the running event loop's
clock (``loop.time()`` under asyncio, ``anyio.current_time()`` for any backend),
never ``time.monotonic()`` directly. On a real loop that is the same monotonic
clock; a test loop with virtual time (``looptime``) then runs every timeout, retry
wait and cooldown without waiting for it. Wall-clock timestamps stored as data
(``created_at``, ``Retry-After`` dates) stay ``time.time()``.
"""

from __future__ import annotations

import time

import anyio

__all__ = ["loop_time"]


def loop_time() -> float:
    """The running event loop's clock; ``time.monotonic()`` outside an event loop."""
    try:
        return anyio.current_time()
    except RuntimeError:  # no async library running (sniffio's error is a RuntimeError)
        return time.monotonic()
