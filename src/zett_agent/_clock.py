"""The runtime's one clock for durations and deadlines: the event loop's.

Every limit, wait and duration the runtime measures reads the running event loop's
clock (``loop.time()`` under asyncio, ``anyio.current_time()`` for any backend),
never ``time.monotonic()`` directly. On a real loop that is the same monotonic
clock; a test loop with virtual time (``looptime``) then runs every timeout, retry
wait and cooldown without waiting for it. Wall-clock timestamps stored as data
(``created_at``, ``Retry-After`` dates) stay ``time.time()``.

The loop's one wall-clock read (the moment a model call starts, which prices its
answer) goes through :func:`wall_now`: a durable engine that replays the loop's
code (Temporal) sets :data:`WALL_CLOCK` to its own deterministic clock for the
run, so a replay reads the time the first run read.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from contextvars import ContextVar

import anyio

__all__ = ["WALL_CLOCK", "loop_time", "wall_now"]

WALL_CLOCK: ContextVar[Callable[[], datetime.datetime] | None] = ContextVar(
    "zett_wall_clock", default=None
)
"""The wall clock :func:`wall_now` reads in this context (None: the system's)."""


def wall_now() -> datetime.datetime:
    """Now, timezone-aware UTC: :data:`WALL_CLOCK`'s when one is set (a durable
    engine's replay-safe clock), else the system clock."""
    clock = WALL_CLOCK.get()
    return clock() if clock is not None else datetime.datetime.now(datetime.UTC)


def loop_time() -> float:
    """The running event loop's clock; ``time.monotonic()`` outside an event loop."""
    try:
        return anyio.current_time()
    except RuntimeError:  # no async library running (sniffio's error is a RuntimeError)
        return time.monotonic()
