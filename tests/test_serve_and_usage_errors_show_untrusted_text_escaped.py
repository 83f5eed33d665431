"""What ``zett serve`` prints (its own lines, uvicorn's error and access logs, every
other logger) and typer's usage errors show the control characters of text zett
did not write escaped (``cat -v`` style, :mod:`zett_agent._terminal_text`): a
client's AG-UI ``runId``, a provider's error text, a model name, raw bytes in a
request line and a User-Agent (a real ``zett serve`` process over a real socket),
and file names and option values in ``zett``'s ``Error: ...`` lines."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import time
from typing import Any

import httpx
import pytest

from zett_agent.testing import ReplayServer, Reply

ESC = "\x1b"
PAYLOAD = f"{ESC}]52;c;aGFja2Vk\x07{ESC}[2J{ESC}[1A{ESC}[2K\x9b31m\u202e"
SHOWN = "^[]52;c;aGFja2Vk^G^[[2J^[[1A^[[2KM-^[31m<U+202E>"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # \n kept


def raw_controls(text: str) -> list[str]:
    return sorted(set(RAW.findall(text)))


def zett(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "300", **(env or {})},
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_a_log_record_of_untrusted_values_is_formatted_safe() -> None:
    """The formatters of ``zett serve``: message, arguments (a string, an exception,
    a number), the traceback and uvicorn's access-log tuple."""
    pytest.importorskip("uvicorn", reason="zett serve needs the 'serve' extra")
    from zett_agent.cli._serve_log import SafeAccessFormatter, SafeDefaultFormatter

    try:
        raise ValueError(f"bad {PAYLOAD}")
    except ValueError:
        info = sys.exc_info()
    record = logging.LogRecord(
        "zett_agent.serve", logging.WARNING, __file__, 1,
        f"f-string {PAYLOAD} then %s, %s and %d", (f"id\n{PAYLOAD}", KeyError(PAYLOAD), 7),
        info,
    )  # fmt: skip
    shown = SafeDefaultFormatter("%(levelprefix)s %(message)s", use_colors=False).format(record)
    assert raw_controls(shown) == [], shown
    assert f"f-string {SHOWN} then id^J{SHOWN}, " in shown  # an argument stays one line
    assert "and 7" in shown and f"ValueError: bad {SHOWN}" in shown  # the traceback
    assert record.msg.startswith(f"f-string {PAYLOAD}")  # the record itself untouched

    access = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", f"/x?q={PAYLOAD}", "1.1", 200), None,
    )  # fmt: skip
    line = SafeAccessFormatter(
        '%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=True
    ).format(access)
    assert f"GET /x?q={SHOWN} HTTP/1.1" in line and "200" in line
    colours = re.compile(f"{re.escape(ESC)}\\[[0-9;]*m")  # uvicorn's own SGR codes
    assert len(colours.findall(line)) == 4 and raw_controls(colours.sub("", line)) == []


@pytest.mark.slow
def test_zett_serve_prints_nothing_a_client_or_provider_sent_raw(tmp_path: Any) -> None:
    """A real ``zett serve --access-log`` process: the model (a replay) fails with
    an error text carrying escapes; an AG-UI client's ``runId`` carries them (zett
    logs it with the failure); the model name given carries them; a raw request
    line and User-Agent carry ESC and a C1 byte. Its stdout and stderr hold no raw
    control character, and show the escapes as ``^[``."""
    pytest.importorskip("uvicorn", reason="zett serve needs the 'serve' extra")

    def route(request: Any) -> Reply:
        error = {"error": {"message": f"provider says {PAYLOAD}", "type": "bad"}}
        return Reply.json(error, status=400)

    with ReplayServer(route=route) as model:
        process = subprocess.Popen(
            [sys.executable, "-m", "zett_agent.cli", "serve", "--port", "0", "--access-log",
             "--model", f"openai:gpt-x{PAYLOAD}", "--db", str(tmp_path / "s.db")],
            env={**os.environ, "COLUMNS": "300", "OPENAI_API_KEY": "test",
                 "ZETT_OPENAI_BASE_URL": model.url},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            assert process.stdout is not None and process.stderr is not None
            first = process.stdout.readline()
            found = re.match(r"zett serve: (http://127\.0\.0\.1:(\d+))/", first)
            assert found, first + (process.stderr.read() if process.poll() is not None else "")
            url, port = found.group(1), int(found.group(2))
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(url + "/", timeout=5).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert process.poll() is None and time.monotonic() < deadline, "not serving"
                time.sleep(0.2)
            body = {
                "threadId": "t1", "runId": f"run{PAYLOAD}", "state": {}, "tools": [],
                "context": [], "forwardedProps": {},
                "messages": [{"id": "u1", "role": "user", "content": f"hi {PAYLOAD}"}],
            }  # fmt: skip
            answer = httpx.post(url + "/api/ag-ui", json=body, timeout=30)
            assert answer.status_code == 200 and "RUN_ERROR" in answer.text, answer.text
            quoted = httpx.get(url + "/api/sessions/x%1b%5b2J%07", timeout=10)
            assert quoted.status_code == 400
            host = f"Host: 127.0.0.1:{port}\r\n"
            for line, status in (
                (f"GET /{ESC}[2J?q={ESC}]52;c;aGk=\x07 HTTP/1.1\r\n{host}\r\n", b"400"),
                (f"GET /?q=1 HTTP/1.1\r\n{host}User-Agent: ua\x9b31m{ESC}[2J\r\n\r\n", b"200"),
            ):
                with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                    raw.sendall(line.encode("latin-1"))
                    assert raw.recv(100).startswith(b"HTTP/1.1 " + status)
        finally:
            process.terminate()
            rest, errors = process.communicate(timeout=30)
    printed = first + rest + errors
    assert raw_controls(printed) == [], printed
    # zett's own line (rich drops the BEL itself)
    assert f"model openai:gpt-x{SHOWN.replace('^G', '')}," in rest
    assert f"AG-UI run run{SHOWN} of session t1 failed" in errors  # zett's log line
    assert '"GET /api/sessions/x%1B%5B2J%07 HTTP/1.1" 400' in rest  # the access log
    assert '"GET /?q=1 HTTP/1.1" 200' in rest
    assert "WARNING:  Invalid HTTP request received." in errors  # uvicorn's (the raw line)


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("sessions", "list", "--db", f"/tmp/no{PAYLOAD}"), f"no such file: /tmp/no{SHOWN}"),
        (("run", "--output-schema", f"/tmp/no{PAYLOAD}", "hi"), f"/tmp/no{SHOWN}: "),
        ((f"--x{PAYLOAD}",), "No such option: --x\\x1b]52"),  # typer's own escape kept
        (("run", f"--y{PAYLOAD}", "hi"), "No such option: --y\\x1b]52"),
    ],
    ids=["zett's BadParameter", "a file name", "typer's group error", "typer's command error"],
)
def test_usage_errors_show_what_was_given_escaped(args: tuple[str, ...], shown: str) -> None:
    """``zett``'s ``Error: ...`` lines (typer's, and zett's own ``BadParameter``
    texts) repeat what was given with its control characters escaped."""
    done = zett(*args, env={"ZETT_MODEL": "openai:gpt-x", "OPENAI_API_KEY": "test"})
    assert done.returncode == 2, done.stderr
    assert raw_controls(done.stderr) == [], done.stderr
    assert shown in done.stderr, done.stderr


def test_every_command_prints_log_warnings_escaped() -> None:
    """A warning of any logger during any command (here one registered for the
    test, in a process of its own: no handler but Python's last resort) is shown
    escaped, its traceback too, and a Python warning as well."""
    script = f"""
import logging, warnings
from zett_agent.cli import app

@app.command("hostile")
def hostile() -> None:
    logging.getLogger("zett_agent.mcp").warning("server %s said", {PAYLOAD!r})
    try:
        raise ValueError({PAYLOAD!r})
    except ValueError:
        logging.getLogger("mcp.client").exception("failed")
    warnings.warn({PAYLOAD!r})

app(["hostile"])
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "always"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert raw_controls(done.stderr) == [], done.stderr
    assert f"server {SHOWN} said" in done.stderr
    assert f"ValueError: {SHOWN}" in done.stderr and f"UserWarning: {SHOWN}" in done.stderr


def test_a_command_leaves_the_logging_a_host_configures_as_it_is() -> None:
    """The safe handler stands in for Python's last resort only: a host that
    configures logging in the command (``logging.basicConfig(level=INFO)`` in an
    ``--agent`` module, a handler of its own) sees its INFO lines, each once (a
    handler added to the root would make basicConfig a no-op and print every
    warning twice)."""
    script = """
import logging
from zett_agent.cli import app

@app.command("host")
def host() -> None:
    logging.basicConfig(level=logging.INFO, format="HOST %(levelname)s %(message)s")
    logging.getLogger("my.agent").info("made the agent")
    logging.getLogger("zett_agent.durable").info("run r1 ended: history of 9 events")
    logging.getLogger("zett_agent.mcp").warning("one warning")

app(["host"])
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "HOST INFO made the agent" in lines, done.stderr
    assert "HOST INFO run r1 ended: history of 9 events" in lines, done.stderr
    assert [line for line in lines if "one warning" in line] == ["HOST WARNING one warning"]
