"""How much of a response zett reads, and how long one model call may take.

:class:`ReadLimits` bounds what a provider (or a proxy in front of it) can make the
process hold: every size is counted **after** decompression. :class:`CallTimeouts`
bounds the time of one attempt of a model call. Both are given to
:class:`~zett_agent.model.Model` (``limits=``, and the timeouts as keyword
arguments); the defaults are in docs/reliability.md.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CallTimeouts", "ReadLimits"]

MiB = 1024 * 1024


@dataclass(frozen=True)
class ReadLimits:
    """Sizes in bytes, after decompression.

    Attributes:
        max_body_bytes: a whole 2xx response, streamed or not.
        max_error_body_bytes: an error response (non-2xx): this much is read, then
            the connection is closed and the prefix decoded.
        max_event_bytes: one SSE event (its data lines together), one SSE line,
            or one NDJSON line.
        max_skipped_bytes: bytes read in a row without a stream event (keep-alive
            comments, ``ping`` events, blank lines); bounds the time a flood of
            input that decodes to nothing can take.

    Exceeding one ends a call that already had output as INTERRUPTED with the text
    kept (``stop.detail["limit"]`` names the limit); with no output it raises
    :class:`~zett_agent.errors.ResponseLimitError` (not retried), or for an error
    body, the provider's error with ``limit`` set (not retried).
    """

    max_body_bytes: int = 128 * MiB
    max_error_body_bytes: int = 1 * MiB
    max_event_bytes: int = 16 * MiB
    max_skipped_bytes: int = 16 * MiB


@dataclass(frozen=True)
class CallTimeouts:
    """Seconds, for one attempt of one model call (each retry gets its own).

    Attributes:
        idle: after output started, the longest time without content progress (a
            text, reasoning, encrypted-reasoning or tool-call piece). Keep-alives
            (Anthropic ``ping``, SSE comments, blank lines, a byte trickle) are not
            progress. Hitting it: INTERRUPTED with the text kept.
        first_output: from the request being sent to the first output of a stream
            (keep-alives may legitimately hold it open); bounded by ``attempt``.
            Hitting it: :class:`~zett_agent.errors.CallTimeoutError`, retried.
        attempt: the whole attempt, streamed or not, from the request being sent to
            the last byte. Hitting it after output: INTERRUPTED with the text kept;
            before: :class:`~zett_agent.errors.CallTimeoutError`, not retried.
        connect: opening the connection (TCP and TLS).
        response: a non-streamed call's longest silence (the server sends nothing
            until it has the whole answer); bounded by ``attempt``.
        pool: waiting for a free connection of the client's pool (other calls hold
            them all). Hitting it: :class:`~zett_agent.errors.PoolTimeoutError`.
    """

    idle: float = 60.0
    first_output: float = 300.0
    attempt: float = 600.0
    connect: float = 10.0
    response: float = 600.0
    pool: float = 60.0
