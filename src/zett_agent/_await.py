"""One helper every hook caller shares: await a value only when it is awaitable."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["maybe_await"]


async def maybe_await(value: Any) -> Any:
    """``await value`` when it is awaitable (a hook written ``async def``), else ``value``."""
    if inspect.isawaitable(value):
        return await value
    return value
