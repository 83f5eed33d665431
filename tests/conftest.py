"""Shared test set-up: every ``async def`` test runs under anyio (asyncio backend,
``anyio_mode = "auto"`` in pyproject.toml);
``RECORDINGS`` is the folder of recorded provider traffic copied from
``../shared/corpus`` (each file's source is in ``tests/recordings/SOURCES.md``).
After a run that reached ``tests/faults/``, the fault matrix (faults x protocols,
passed/run) is printed; it lives here, not in ``tests/faults/``, so that it is
printed under pytest-xdist too (the controller loads only this conftest)."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

RECORDINGS = Path(__file__).parent / "recordings"


def virtual_time_loop() -> asyncio.AbstractEventLoop:
    """An asyncio loop whose clock is virtual (looptime), starting at 0: when every
    task waits for a timer, the clock jumps to it. Only for tests whose every wait
    is in the loop (no sockets, no threads): a real wait would lose the race."""
    import looptime

    return looptime.new_event_loop(start=0.0)


def on_virtual_time(node: pytest.Item) -> bool:
    """Marked ``looptime`` (the test or its module) and not ``realclock``."""
    return bool(node.get_closest_marker("looptime")) and not node.get_closest_marker("realclock")


@pytest.fixture
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    """asyncio; on a virtual-time loop for tests marked ``looptime`` (and not
    ``realclock``, which a test of a virtual-time module takes for a real loop)."""
    if on_virtual_time(request.node):
        return ("asyncio", {"loop_factory": virtual_time_loop})
    return "asyncio"


async def _run_sync_on_the_loops_executor(
    func: Callable[..., Any],
    *args: Any,
    abandon_on_cancel: bool = False,
    cancellable: bool | None = None,
    limiter: Any = None,
) -> Any:
    """``anyio.to_thread.run_sync`` through ``loop.run_in_executor``: looptime sees
    those futures and lets real time pass while a thread works (anyio's own worker
    threads it cannot see, so the clock would jump to the next timer meanwhile).
    Same contract: the context is copied; without ``abandon_on_cancel`` a
    cancellation waits for the thread to finish."""
    future = asyncio.get_running_loop().run_in_executor(
        None, functools.partial(contextvars.copy_context().run, func, *args)
    )
    if abandon_on_cancel or cancellable:
        return await future
    cancelled: BaseException | None = None
    while not future.done():
        try:
            await asyncio.shield(future)
        except asyncio.CancelledError as error:
            cancelled = error
    if cancelled is not None:
        raise cancelled
    return future.result()


@pytest.fixture(autouse=True)
def _threads_seen_by_virtual_time(request: pytest.FixtureRequest) -> Iterator[None]:
    if not on_virtual_time(request.node):
        yield
        return
    import anyio.to_thread

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(anyio.to_thread, "run_sync", _run_sync_on_the_loops_executor)
        yield


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see real keys or base URLs from the developer's environment."""
    import os

    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_BASE_URL")) or name in {"OLLAMA_HOST"}:
            monkeypatch.delenv(name, raising=False)


# ---------------------------------------------------------------- the fault matrix

_RESULTS: dict[tuple[str, str], list[bool]] = defaultdict(list)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "tests/faults/" not in report.nodeid.replace("\\", "/"):
        return
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    match = re.search(r"::test_(\w+)\[(.+)\]$", report.nodeid)
    if match is None:
        return
    from faults.wire import WIRES

    protocols = sorted(WIRES, key=len, reverse=True)  # "openai-responses" before "openai"
    fault, params = match.groups()
    protocol = next((w for w in protocols if f"-{params}-".find(f"-{w}-") >= 0), None)
    if protocol is None:  # not parametrized by protocol: not a row of the matrix
        return
    rest = f"-{params}-".replace(f"-{protocol}-", "-", 1).strip("-")
    name = f"{fault}[{rest}]" if rest else fault  # an HTTP status, a keep-alive kind
    _RESULTS[(name, protocol)].append(report.passed)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _RESULTS:
        return
    protocols = sorted({p for _, p in _RESULTS})
    faults = sorted({f for f, _ in _RESULTS})
    write = terminalreporter.write_line
    write("")
    write("fault matrix (passed/run per protocol)")
    width = max(len(f) for f in faults)
    write(f"{'fault':{width}}  " + "  ".join(f"{p:>17}" for p in protocols))
    total = passed = 0
    for fault in faults:
        cells = []
        for protocol in protocols:
            runs = _RESULTS.get((fault, protocol), [])
            total += len(runs)
            passed += sum(runs)
            cells.append(f"{sum(runs)}/{len(runs)}" if runs else "-")
        write(f"{fault:{width}}  " + "  ".join(f"{c:>17}" for c in cells))
    write(f"total: {passed}/{total} passed ({len(faults)} faults x {len(protocols)} protocols)")
