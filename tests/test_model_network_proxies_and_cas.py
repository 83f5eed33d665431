"""A model call uses the network the host configured: the environment's proxies
(httpx 0.28's rules), its CA bundle (``SSL_CERT_FILE``/``SSL_CERT_DIR``), a passed
``verify=`` or ``proxy=``, and ``trust_env=False`` to ignore the environment.

The proxy is a real one from PyPI (``pproxy``, pinned in the dev extra) started on
127.0.0.1 by these tests, asking for credentials; https goes through it with
CONNECT to a ``ReplayServer`` whose certificate a test CA (``trustme``) signed.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from faults.test_fault_matrix import TEXTS
from faults.wire import WIRES, Wire
from zett_agent import ModelRequest, UserMessage
from zett_agent.errors import ProviderHTTPError, TransportError
from zett_agent.model import Model, ModelTransport
from zett_agent.model._pool import _ssl_context
from zett_agent.model._proxies import ProxyRoutes, redacted
from zett_agent.testing import ReplayServer, Reply

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("pproxy") is None,
        reason="pproxy (a forward proxy from PyPI, in the dev extra) is not installed",
    ),
    pytest.mark.skipif(
        importlib.util.find_spec("trustme") is None,
        reason="trustme (a test CA, in the dev extra) is not installed",
    ),
]

RECORDINGS = Path(__file__).parent / "recordings"
BODIES = {
    "anthropic": "anthropic__doc_usage_cache_read_write.json",
    "openai-chat": "openai_chat__doc_usage_cached_reasoning.json",
    "openai-responses": "openai_responses__doc_usage_cached_reasoning.json",
    "gemini": "gemini__finish_max_tokens.json",
    "ollama": "ollama__doc_usage_counts.json",
}
"""A whole (not streamed) answer per protocol, for the body path."""
USER, SECRET = "zett", "proxy-secret-4711"
KEY = "sk-test-network-0000"
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@dataclass
class Proxy:
    port: int
    log: Path

    def url(self, user: str = USER, password: str = SECRET) -> str:
        return f"http://{user}:{password}@127.0.0.1:{self.port}"

    def seen(self) -> str:
        """What the proxy logged: one line per connection it opened for a client."""
        time.sleep(0.05)  # the log line is written as the connection opens
        return self.log.read_text()

    def clear(self) -> None:
        self.log.write_text("")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """pproxy on 127.0.0.1, HTTP proxy with CONNECT, asking for USER:SECRET on every
    connection (``--auth 0``: by default it trusts an address that once logged in)."""
    log = tmp_path_factory.mktemp("proxy") / "proxy.log"
    port = _free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pproxy",
                "-l",
                f"http://127.0.0.1:{port}#{USER}:{SECRET}",
                "-v",
                "--auth",
                "0",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"pproxy did not start: {log.read_text()}") from None
                time.sleep(0.05)
        yield Proxy(port, log)
    finally:
        process.terminate()
        process.wait(10)


@dataclass
class CAFiles:
    pem: Path
    server: ssl.SSLContext
    client: ssl.SSLContext


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> CAFiles:
    import trustme

    authority = trustme.CA()
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("127.0.0.1", "localhost").configure_cert(server)
    client = ssl.create_default_context()
    authority.configure_trust(client)
    return CAFiles(pem, server, client)


@pytest.fixture(autouse=True)
def network_env(monkeypatch: pytest.MonkeyPatch, proxy: Proxy) -> Iterator[None]:
    """No proxy or CA variable from outside; the shared TLS context made afresh."""
    for name in (*PROXY_VARS, "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    _ssl_context.cache_clear()
    proxy.clear()
    yield
    _ssl_context.cache_clear()


def _request() -> ModelRequest:
    return ModelRequest("m", [UserMessage("hi")])


def _reply(wire: Wire, stream: bool) -> Reply:
    if stream:
        return wire.reply(wire.answer(TEXTS))
    return Reply.file(RECORDINGS / BODIES[wire.name])


def _origin(server: ReplayServer) -> str:
    return httpx.URL(server.url).netloc.decode()


# ---------------------------------------------------------------- every protocol


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize("scheme", ["http", "https"])
@pytest.mark.parametrize("name", list(WIRES))
async def test_every_protocol_goes_through_the_environment_s_proxy(
    name: str,
    scheme: str,
    stream: bool,
    proxy: Proxy,
    ca: CAFiles,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """http is sent to the proxy, https is a CONNECT tunnel through it, the test CA
    trusted through ``SSL_CERT_FILE``; the proxy's credentials reach the proxy only."""
    wire = WIRES[name]
    monkeypatch.setenv(f"{scheme}_proxy", proxy.url())  # lower-case, as curl writes it
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.pem))
    tls = ca.server if scheme == "https" else None
    with ReplayServer([_reply(wire, stream)], ssl_context=tls) as server:
        model = Model(wire.vendor, "m", base_url=server.url, api_key=KEY, stream=stream)
        try:
            response = await model.complete(_request())
        finally:
            await model.aclose()
    assert response.text
    if stream:
        assert response.text == "".join(TEXTS)
    assert f"-> {_origin(server)}" in proxy.seen()  # the proxy opened the connection
    sent = server.requests[0].headers
    assert "proxy-authorization" not in sent and all(SECRET not in v for v in sent.values())


async def test_wrong_proxy_credentials_are_a_proxy_error_that_hides_them(
    proxy: Proxy, ca: CAFiles, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    monkeypatch.setenv("HTTPS_PROXY", proxy.url(password="wrong-secret-0815"))
    with ReplayServer([Reply.json({})], ssl_context=ca.server) as server:
        model = Model("openai", "m", base_url=server.url, api_key=KEY, verify=str(ca.pem))
        model.max_retries = 0
        with pytest.raises(TransportError) as caught:
            await model.complete(_request())
        await model.aclose()
    assert "ProxyError" in str(caught.value) and "407" in str(caught.value)
    assert not server.requests
    assert "wrong-secret-0815" not in str(caught.value) + repr(caught.value) + caplog.text


async def test_an_unreachable_proxy_is_a_proxy_error_without_its_credentials(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    monkeypatch.setenv("ALL_PROXY", f"http://u:never-print-me@127.0.0.1:{_free_port()}")
    model = Model("openai", "m", base_url="http://127.0.0.1:9", api_key=KEY, max_retries=0)
    with pytest.raises(TransportError) as caught:
        await model.complete(_request())
    info = model.network()
    await model.aclose()
    assert "ProxyError" in str(caught.value)
    assert "never-print-me" not in str(caught.value) + caplog.text + str(info)
    assert info["proxy"].startswith("http://***@127.0.0.1:")


# ---------------------------------------------------------------- which calls go where


async def test_no_proxy_hosts_connect_directly(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url())
    monkeypatch.setenv("NO_PROXY", "example.com, 127.0.0.1")
    with ReplayServer([Reply.file(RECORDINGS / BODIES["openai-chat"])]) as server:
        model = Model("openai", "m", base_url=server.url, api_key=KEY, stream=False)
        assert (await model.complete(_request())).text
        await model.aclose()
    assert proxy.seen() == ""


async def test_trust_env_false_ignores_the_proxy_variables(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_free_port()}")  # nothing listens
    with ReplayServer([Reply.file(RECORDINGS / BODIES["anthropic"])]) as server:
        model = Model(
            "anthropic", "m", base_url=server.url, api_key=KEY, stream=False, trust_env=False
        )
        assert (await model.complete(_request())).text == "Cached."
        assert model.network()["proxy"] == "none (direct)"
        await model.aclose()


async def test_an_explicit_proxy_replaces_the_environment(
    proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "*")  # not read for an explicit proxy (as httpx)
    with ReplayServer([Reply.file(RECORDINGS / BODIES["anthropic"])]) as server:
        model = Model(
            "anthropic", "m", base_url=server.url, api_key=KEY, stream=False, proxy=proxy.url()
        )
        assert (await model.complete(_request())).text == "Cached."
        await model.aclose()
    assert f"-> {_origin(server)}" in proxy.seen()


@pytest.mark.parametrize("client", ["model-transport", "httpx-own"])
async def test_credentials_never_follow_a_redirect_to_another_origin_through_the_proxy(
    client: str, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider answers 307 to another origin (``localhost`` on another port);
    both go through the proxy; the key and the gateway token stay behind. On a host's
    own httpx client (httpx's env proxies) and on zett's pool alike."""
    monkeypatch.setenv("HTTP_PROXY", proxy.url())
    other = ReplayServer([Reply.json({"error": {"message": "who are you"}}, status=401)])
    other._host = "localhost"
    with other:
        redirect = Reply.body(
            b"", status=307, headers={"location": other.url + "/v1/chat/completions"}
        )
        with ReplayServer([redirect]) as server:
            transport = ModelTransport() if client == "model-transport" else None
            http = httpx.AsyncClient(follow_redirects=True, transport=transport)
            model = Model(
                "openai",
                "m",
                base_url=server.url,
                api_key=KEY,
                client=http,
                headers={"x-gateway-token": "gateway-secret"},
            )
            with pytest.raises(ProviderHTTPError):
                await model.complete(_request())
            await http.aclose()
    seen = proxy.seen()
    assert f"-> {_origin(server)}" in seen and f"-> {_origin(other)}" in seen
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    followed = other.requests[0].headers
    assert "authorization" not in followed and "x-gateway-token" not in followed, followed
    assert all(KEY not in v and "gateway-secret" not in v for v in followed.values())


# ---------------------------------------------------------------- the CA bundle


async def test_ssl_cert_dir_is_the_ca_bundle_when_no_file_is_set(
    ca: CAFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl (to name a CA directory's files by hash) is not installed")
    digest = subprocess.run(
        [openssl, "x509", "-hash", "-noout", "-in", str(ca.pem)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shutil.copy(ca.pem, tmp_path / f"{digest}.0")
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    with ReplayServer([Reply.file(RECORDINGS / BODIES["anthropic"])], ssl_context=ca.server) as s:
        model = Model("anthropic", "m", base_url=s.url, api_key=KEY, stream=False)
        assert (await model.complete(_request())).text == "Cached."
        assert model.network()["ca"] == f"SSL_CERT_DIR={tmp_path}"
        await model.aclose()


@pytest.mark.parametrize("verify", ["context", "path"])
async def test_a_passed_verify_is_the_trust_the_model_uses(
    verify: str, ca: CAFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen: Any = ca.client if verify == "context" else str(ca.pem)
    with ReplayServer([Reply.file(RECORDINGS / BODIES["anthropic"])], ssl_context=ca.server) as s:
        model = Model("anthropic", "m", base_url=s.url, api_key=KEY, stream=False, verify=chosen)
        assert (await model.complete(_request())).text == "Cached."
        await model.aclose()


async def test_without_the_ca_the_certificate_is_refused(
    ca: CAFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trust_env=False`` ignores ``SSL_CERT_FILE``: certifi's CAs do not know the test CA."""
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.pem))
    with ReplayServer([Reply.json({})], ssl_context=ca.server) as server:
        model = Model(
            "openai", "m", base_url=server.url, api_key=KEY, max_retries=0, trust_env=False
        )
        with pytest.raises(TransportError) as caught:
            await model.complete(_request())
        assert model.network()["ca"].startswith("certifi ")
        await model.aclose()
    assert "certificate" in str(caught.value).lower()


# ---------------------------------------------------------------- httpx's rules


def _routes(monkeypatch: pytest.MonkeyPatch, **env: str) -> ProxyRoutes:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return ProxyRoutes.from_env()


def _via(routes: ProxyRoutes, url: str) -> str | None:
    proxy = routes.for_url(httpx.URL(url))
    return None if proxy is None else str(proxy)


def test_the_proxy_rules_are_httpx_s(monkeypatch: pytest.MonkeyPatch) -> None:
    routes = _routes(
        monkeypatch,
        HTTP_PROXY="plain:3128",  # no scheme: http://
        HTTPS_PROXY="http://tls:3128",
        ALL_PROXY="http://all:3128",
        NO_PROXY="example.com,.internal.org,localhost,10.0.0.0/8,::1,svc:8080",
    )
    assert _via(routes, "http://api.x.ai/v1") == "http://plain:3128"
    assert _via(routes, "https://api.x.ai/v1") == "http://tls:3128"
    assert _via(routes, "ftp://files.x.ai/") == "http://all:3128"
    assert _via(routes, "https://example.com/") is None  # the domain
    assert _via(routes, "https://api.example.com/") is None  # and its subdomains
    assert _via(routes, "https://notexample.com/") == "http://tls:3128"
    assert _via(routes, "https://internal.org/") == "http://tls:3128"  # .x: subdomains only
    assert _via(routes, "https://a.internal.org/") is None
    assert _via(routes, "http://localhost:11434/") is None
    assert _via(routes, "http://[::1]:8080/") is None
    assert _via(routes, "http://svc:8080/") is None and _via(routes, "http://svc:80/")
    # a CIDR range is not matched as a range (httpx's rule): only the address itself
    assert _via(routes, "http://10.0.0.0/") is None
    assert _via(routes, "http://10.1.2.3/") == "http://plain:3128"
    # what httpx itself decides for the same environment
    with httpx.Client() as stock:
        for url in ("http://api.x.ai/", "https://a.internal.org/", "http://10.1.2.3/"):
            mounted = stock._transport_for_url(httpx.URL(url))
            pool = getattr(mounted, "_pool", None)
            via = getattr(pool, "_proxy_url", None)
            ours = routes.for_url(httpx.URL(url))
            assert (via is None) == (ours is None), url


def test_lower_case_names_win_and_a_star_turns_proxies_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    routes = _routes(monkeypatch, HTTPS_PROXY="http://upper:1", https_proxy="http://lower:2")
    assert _via(routes, "https://api.openai.com/") == "http://lower:2"
    assert not _routes(monkeypatch, NO_PROXY="*")
    assert not ProxyRoutes.none()


def test_a_proxy_url_is_printed_without_its_credentials() -> None:
    assert redacted("http://user:pa55@proxy:3128") == "http://***@proxy:3128"
    assert redacted("http://proxy:3128") == "http://proxy:3128"
    assert redacted(None) is None


def test_under_trio_the_proxy_is_used_too(proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    """trio has no aiohttp: httpx's own transport serves, through the same proxy."""
    trio = pytest.importorskip("trio", reason="trio (in the dev extra) is not installed")
    monkeypatch.setenv("HTTP_PROXY", proxy.url())
    with ReplayServer([Reply.file(RECORDINGS / BODIES["anthropic"])]) as server:

        async def main() -> str:
            model = Model("anthropic", "m", base_url=server.url, api_key=KEY, stream=False)
            try:
                return (await model.complete(_request())).text
            finally:
                await model.aclose()

        assert trio.run(main) == "Cached."
    assert f"-> {_origin(server)}" in proxy.seen()
