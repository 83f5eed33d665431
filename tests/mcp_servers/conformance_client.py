"""zett-agent's MCP client under ``@modelcontextprotocol/conformance client``.

The suite starts a test server for a scenario and runs ``python
conformance_client.py URL`` (the scenario in ``MCP_CONFORMANCE_SCENARIO``, its
data, such as pre-registered credentials, in ``MCP_CONFORMANCE_CONTEXT``). This
uses zett's public API only: :class:`zett_agent.mcp.MCPTools` with the
authorization helpers ``zett_agent.mcp`` exports (``oauth``,
``client_credentials``...), an elicitation callback that accepts the schema's
defaults, and an agent whose scripted model
(:class:`zett_agent.testing.ScriptedModel`) calls every offered tool once, so each
call passes the tool gate as a model's would. ``.ci/run`` runs the suite (see
``tests/mcp_conformance/run.sh``).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from zett_agent import ModelRequest, ToolCall, create_agent
from zett_agent.mcp import (
    ElicitationRequest,
    ElicitationResponse,
    MCPServer,
    MCPTools,
    MemoryTokenStorage,
    client_credentials,
    identity_assertion,
    oauth,
)
from zett_agent.testing import ScriptedModel, ScriptedTurn, reply

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


def arguments_for(schema: dict[str, Any]) -> dict[str, Any]:
    """Numbers for number arguments, True for booleans, "x" for the rest."""
    values: dict[str, Any] = {}
    for name, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        values[name] = {"number": 1, "integer": 1, "boolean": True}.get(str(kind), "x")
    return values


async def browser(url: str) -> str:
    """The person at the authorization URL: the test server approves at once and
    redirects; the URL it redirects to is what a person would paste."""
    async with httpx.AsyncClient() as http:
        response = await http.get(url, follow_redirects=False)
    location = response.headers.get("location")
    if not location:
        raise RuntimeError(f"no redirect from the authorization endpoint ({response.status_code})")
    return location


async def accept_defaults(request: ElicitationRequest) -> ElicitationResponse:
    return ElicitationResponse.accept(request.defaults)


async def authorization_server(url: str) -> tuple[str, Any]:
    """The issuer the MCP server's protected-resource metadata names (RFC 9728),
    and the client authentication its metadata (RFC 8414) prefers."""
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    async with httpx.AsyncClient() as http:
        issuer = str((await http.get(where)).json()["authorization_servers"][0])
        about = (await http.get(f"{issuer}/.well-known/oauth-authorization-server")).json()
    methods = about.get("token_endpoint_auth_methods_supported") or []
    method = "client_secret_post" if methods == ["client_secret_post"] else "client_secret_basic"
    return issuer, method


def id_jag_from_the_identity_provider(context: dict[str, Any]) -> Any:
    """The host's side of SEP-990 leg 1: an RFC 8693 token exchange of the person's
    ID token at the identity provider for an ID-JAG."""

    async def exchange(audience: str, resource: str) -> str:
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "subject_token": context["idp_id_token"],
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "audience": audience,
            "resource": resource,
            "client_id": context.get("idp_client_id", ""),
        }
        async with httpx.AsyncClient() as http:
            answer = await http.post(context["idp_token_endpoint"], data=form)
        return str(answer.json()["access_token"])

    return exchange


async def authorization(url: str, scenario: str, context: dict[str, Any]) -> Any:
    if scenario == "auth/client-credentials-basic":
        return client_credentials(
            url, client_id=context["client_id"], client_secret=context["client_secret"]
        )
    if scenario == "auth/client-credentials-jwt":
        return client_credentials(
            url,
            client_id=context["client_id"],
            private_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    if scenario == "auth/cross-app-access-complete-flow":
        issuer, method = await authorization_server(url)
        return identity_assertion(
            url,
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            issuer=issuer,
            assertion=id_jag_from_the_identity_provider(context),
            token_endpoint_auth_method=method,
        )
    if scenario.startswith("auth/"):
        return oauth(
            url,
            browser,
            storage=MemoryTokenStorage(),
            client_id=context.get("client_id"),
            client_secret=context.get("client_secret"),
            client_metadata_url=CLIENT_METADATA_URL,
        )
    return None


def call_every_tool(tools: MCPTools) -> Any:
    def turn(request: ModelRequest) -> ScriptedTurn:
        calls = [
            ToolCall(f"c{i}", spec.name, json.dumps(arguments_for(dict(spec.parameters))))
            for i, spec in enumerate(request.tools)
        ]
        return reply(tool_calls=calls)

    return turn


async def main(url: str) -> None:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    auth = await authorization(url, scenario, context)
    server = MCPServer.http(url, timeout=20, auth=auth)
    async with MCPTools([server], elicitation=accept_defaults) as tools:
        model = ScriptedModel(call_every_tool(tools), reply("done"))
        agent = await create_agent(model)
        tools.attach(agent)
        async for event in agent.stream("call each tool"):
            if event.tool_result is not None:
                result = event.tool_result
                print(result.name, "->", result.content[:200], "(error)" if result.is_error else "")
        await agent.aclose()
    print("done:", urlsplit(url).path)


if __name__ == "__main__":
    anyio.run(main, sys.argv[-1])
