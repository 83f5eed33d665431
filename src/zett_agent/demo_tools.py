"""Two built-in tools for trying an agent (``zett run --tools demo``).

Plain typed functions with docstrings; :func:`zett_agent.tools.as_tool` builds
their schemas. ``get_weather`` is fake: deterministic demo data, never a forecast.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["DEMO_TOOLS", "get_time", "get_weather", "select_demo_tools"]

_KNOWN: dict[str, tuple[str, int]] = {
    "paris": ("light rain", 14),
    "london": ("overcast", 12),
    "berlin": ("sunny", 18),
    "new york": ("partly cloudy", 21),
    "tokyo": ("clear", 24),
    "sydney": ("windy", 19),
}
_SKIES = ("sunny", "partly cloudy", "overcast", "light rain", "clear", "windy", "foggy")


def get_weather(city: str) -> str:
    """Get the current weather for a city (demo data, not a real forecast).

    Args:
        city: the city name, such as "Paris".
    """
    key = " ".join(city.lower().split())
    if not key:
        return "No city given."
    known = _KNOWN.get(key)
    if known is None:
        digest = hashlib.sha256(key.encode()).digest()
        known = (_SKIES[digest[0] % len(_SKIES)], digest[1] % 35 - 5)
    sky, celsius = known
    return f"{city.strip()}: {sky}, {celsius} °C (demo data, not a real forecast)"


def get_time(timezone: str = "UTC") -> str:
    """Get the current date and time in a time zone.

    Args:
        timezone: an IANA time zone name such as "Europe/Paris"; default "UTC".
    """
    try:
        zone = ZoneInfo(timezone.strip() or "UTC")
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return f"Unknown time zone {timezone!r}; use an IANA name such as 'Europe/Paris'."
    now = datetime.now(zone)
    return f"{now:%Y-%m-%d %H:%M:%S} {now.tzname()} ({zone.key})"


DEMO_TOOLS = (get_weather, get_time)
"""The tools ``zett run --tools demo`` offers."""


def select_demo_tools(spec: str) -> tuple[Any, ...]:
    """The demo tools named by ``spec``: ``"demo"`` (all), ``"none"``, or tool names
    joined by commas (``"get_weather"``). Raises ``ValueError`` for an unknown name."""
    if spec == "demo":
        return DEMO_TOOLS
    if spec == "none":
        return ()
    by_name = {tool.__name__: tool for tool in DEMO_TOOLS}
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in by_name]
    if unknown or not names:
        known = ", ".join(["demo", "none", *by_name])
        raise ValueError(f"unknown tool {', '.join(unknown) or spec!r}; use one of: {known}")
    return tuple(by_name[name] for name in names)
