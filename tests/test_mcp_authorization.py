"""Authorizing zett at MCP servers (``zett_agent.mcp._auth``): tokens stored only
for their owner, a host's token provider asked again after a 401, tokens kept out
of results and errors, a 401/403 nothing resolves is ``MCPAuthorizationError``,
the CLI's redirect callback. The OAuth flows themselves (PKCE, discovery,
registration, client credentials, step-up) are proven by the official
conformance suite in CI (``tests/mcp_conformance/run.sh``)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_helpers import FAULTY, http_server, need_mcp
from zett_agent import MCPAuthorizationError, ToolCall

pytestmark = pytest.mark.mcp

TOKEN = "tok-0123456789abcdef"


async def test_the_file_storage_is_readable_only_by_its_owner(
    tmp_path: Path, monkeypatch: Any
) -> None:
    need_mcp()
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from zett_agent.mcp import FileTokenStorage

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    storage = FileTokenStorage(server_url="https://example.com/mcp")
    assert storage.path.parent == tmp_path / "state" / "zett" / "mcp-auth"
    assert await storage.get_tokens() is None
    await storage.set_tokens(OAuthToken(access_token=TOKEN, refresh_token="r" * 20))
    await storage.set_client_info(OAuthClientInformationFull(client_id="c1", redirect_uris=None))
    assert stat.S_IMODE(storage.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(storage.path.parent.stat().st_mode) == 0o700
    again = FileTokenStorage(server_url="https://example.com/mcp")
    tokens = await again.get_tokens()
    assert tokens is not None and tokens.access_token == TOKEN
    info = await again.get_client_info()
    assert info is not None and info.client_id == "c1"
    other = FileTokenStorage(server_url="https://other.example.com/mcp")
    assert other.path != storage.path  # one file per server
    storage.path.write_text("{not json")
    assert await storage.get_tokens() is None  # unreadable: empty, never a crash


async def test_a_token_provider_is_asked_again_after_a_401_and_its_token_is_redacted() -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools, bearer

    asked: list[int] = []

    async def token() -> str:
        asked.append(1)
        return TOKEN

    args = [str(FAULTY), "initialize", "http401", "--http", "{port}"]  # the first greeting: 401
    with http_server(args) as (url, _):
        async with MCPTools([MCPServer.http(url, auth=bearer(token))]) as tools:
            echo = tools.tools["echo"]
            result = await echo.call(ToolCall("c1", "echo", f'{{"text": "my token is {TOKEN}"}}'))
    assert len(asked) == 2
    assert result.content == "my token is [redacted]"


async def test_a_401_nothing_resolves_is_an_authorization_error_without_the_token() -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools, bearer

    for how in ("http401", "http403"):
        args = [str(FAULTY), "tools/list", how, "--nth", "0", "--http", "{port}"]
        with http_server(args) as (url, _):
            server = MCPServer.http(url, auth=bearer(lambda: TOKEN), connect_timeout=5)
            with anyio.fail_after(20), pytest.raises(MCPAuthorizationError) as raised:
                async with MCPTools([server]):
                    pass
        assert raised.value.server == url and TOKEN not in str(raised.value)
        assert "auth= could not obtain an accepted token" in str(raised.value)


async def test_a_401_during_a_call_is_an_error_result_saying_authorization_is_needed() -> None:
    need_mcp()
    from zett_agent.mcp import MCPServer, MCPTools

    with http_server([str(FAULTY), "tools/call", "http403", "--http", "{port}"]) as (url, _):
        async with MCPTools(
            [MCPServer.http(url, headers={"Authorization": f"Bearer {TOKEN}"})]
        ) as tools:
            result = await tools.tools["echo"].call(ToolCall("c1", "echo", '{"text": "x"}'))
    assert result.is_error and "needs authorization" in result.content
    assert "insufficient_scope: files:write is needed" in result.content
    assert TOKEN not in result.content


async def test_the_redirect_callback_takes_the_url_the_browser_landed_on_or_the_code() -> None:
    need_mcp()
    from zett_agent.mcp import MemoryTokenStorage, oauth

    replies = iter(
        ["http://127.0.0.1:33418/callback?code=abc&state=s1&iss=https%3A%2F%2Fas", "xyz"]
    )

    async def authorize(url: str) -> str:
        return next(replies)

    provider: Any = oauth("https://mcp.example.com/mcp", authorize, storage=MemoryTokenStorage())
    await provider.context.redirect_handler("https://as/authorize?state=s1&client_id=c")
    pasted = await provider.context.callback_handler()
    assert (pasted.code, pasted.state, pasted.iss) == ("abc", "s1", "https://as")
    await provider.context.redirect_handler("https://as/authorize?state=s2")
    typed = await provider.context.callback_handler()
    assert (typed.code, typed.state) == ("xyz", "s2")


async def test_the_cli_callback_needs_a_terminal() -> None:
    need_mcp()
    from zett_agent.mcp import ask_in_terminal

    if sys.stdin.isatty():
        pytest.skip("stdin is a terminal here")
    with pytest.raises(MCPAuthorizationError, match="no terminal can ask"):
        await ask_in_terminal("https://as.example.com/authorize?state=s")


async def test_the_cli_callback_shows_the_servers_url_escaped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The authorization URL comes from the server's metadata: its control
    characters (OSC 52, clear-screen) reach the terminal escaped, on one line."""
    need_mcp()
    import builtins
    import io

    from zett_agent.mcp import ask_in_terminal

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    monkeypatch.setattr(builtins, "input", lambda prompt: "the-code")
    url = "https://as.example.com/authorize\x1b]52;c;aGk=\x07\x1b[2J\n?state=s"
    assert await ask_in_terminal(url) == "the-code"
    shown = capsys.readouterr().err
    assert "https://as.example.com/authorize^[]52;c;aGk=^G^[[2J^J?state=s" in shown
    assert "\x1b" not in shown and "\x07" not in shown


def test_secrets_of_an_oauth_provider_are_known_for_redaction() -> None:
    need_mcp()
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from zett_agent.mcp._auth import MemoryTokenStorage, auth_secrets, client_credentials, oauth

    async def authorize(url: str) -> str:
        return ""

    provider: Any = oauth("https://mcp.example.com/mcp", authorize, storage=MemoryTokenStorage())
    provider.context.current_tokens = OAuthToken(access_token=TOKEN, refresh_token="refresh-" * 3)
    provider.context.client_info = OAuthClientInformationFull(
        client_id="c", client_secret="secret-abcdef", redirect_uris=None
    )
    assert auth_secrets(provider) == {TOKEN, "refresh-" * 3, "secret-abcdef"}
    machine = client_credentials(
        "https://mcp.example.com/mcp", client_id="c", client_secret="s" * 12
    )
    assert "s" * 12 in auth_secrets(machine)


async def test_tokens_are_redacted_from_the_sdks_log_records(caplog: Any) -> None:
    need_mcp()
    import logging

    from zett_agent.mcp import MCPServer, MCPTools, bearer

    with http_server([str(FAULTY), "none", "error", "--http", "{port}"]) as (url, _):
        async with MCPTools([MCPServer.http(url, auth=bearer(lambda: TOKEN))]) as tools:
            await tools.tools["echo"].call(ToolCall("c1", "echo", '{"text": "x"}'))  # token used
            with caplog.at_level(logging.DEBUG):
                logging.getLogger("mcp.client.auth.oauth2").warning("token response %s", TOKEN)
                logging.getLogger("client").debug(f"sent Authorization: Bearer {TOKEN}")
    assert TOKEN not in caplog.text
    assert caplog.text.count("[redacted]") == 2


async def test_a_token_file_in_a_folder_the_host_chose_is_0600_and_the_folder_keeps_its_mode(
    tmp_path: Path,
) -> None:
    need_mcp()
    import os

    from mcp.shared.auth import OAuthToken

    from zett_agent.mcp import FileTokenStorage

    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o755)
    path = folder / "tokens.json"
    stale = folder / f".tokens.json.{os.getpid()}.tmp"  # left by a crash, world-readable
    stale.write_text("old")
    stale.chmod(0o644)
    storage = FileTokenStorage(path)
    await storage.set_tokens(OAuthToken(access_token=TOKEN))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755  # the host's folder: never chmod
    assert not stale.exists()
    tokens = await FileTokenStorage(path).get_tokens()
    assert tokens is not None and tokens.access_token == TOKEN
