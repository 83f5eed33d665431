"""A small MCP server (stdio, the ``mcp`` package's MCPServer; either protocol era)
that asks things of its client, and offers resources and prompts:

* ``ask_name``: a form elicitation (``name`` with the default "Ada", ``age``)
* ``ask_url``: a URL elicitation (the 2025 era only: MCPServer 2.3.0 has no
  resolver for it)
* ``summarize(text)``: a sampling request; answers the model's text, stop reason
  and ``_meta``
* ``slow``: three progress notifications and a log message, then "done"
* ``where``: the client's roots
* ``touch(uri)``: says the resource changed
* resources ``note://greeting`` (text) and ``blob://dot`` (bytes); prompt
  ``greet(name)`` (a user and an assistant message)

Every tool call is logged to the file named by ``ASKING_LOG`` (when set).
"""

from __future__ import annotations

import json
import os
from typing import Annotated

import mcp_types
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from pydantic import BaseModel, Field

server = MCPServer("asking")


def log(entry: dict[str, object]) -> None:
    path = os.environ.get("ASKING_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


class Person(BaseModel):
    name: str = Field(default="Ada", description="Your name")
    age: int = Field(default=36, description="Your age")


# Resolve(...) asks as the negotiated protocol says: a request mid-call (2025), or
# an input request inside the result that the client answers on a retry (2026-07-28).
def person() -> Elicit[Person]:
    return Elicit("What is your name?", Person)


@server.tool()
async def ask_name(answer: Annotated[ElicitationResult[Person], Resolve(person)]) -> str:
    """Ask the person for their name."""
    log({"tool": "ask_name"})
    if isinstance(answer, AcceptedElicitation):
        return f"hello {answer.data.name} ({answer.data.age})"
    return str(answer.action)


@server.tool()
async def ask_url(ctx: Context) -> str:
    """Send the person to a page."""
    log({"tool": "ask_url"})
    answer = await ctx.elicit_url("Sign in there", "https://example.com/sign-in", "e-1")
    return answer.action


def summary(text: str) -> Sample:
    message = mcp_types.SamplingMessage(
        role="user", content=mcp_types.TextContent(type="text", text=text)
    )
    return Sample([message], max_tokens=50_000, system_prompt="Summarize.")


@server.tool()
async def summarize(
    text: str, result: Annotated[mcp_types.CreateMessageResult, Resolve(summary)]
) -> str:
    """Ask the client's model to summarize ``text``."""
    log({"tool": "summarize"})
    content = result.content if not isinstance(result.content, list) else result.content[0]
    text_out = getattr(content, "text", "")
    return json.dumps({"text": text_out, "stop": result.stop_reason, "meta": result.meta})


@server.tool()
async def slow(ctx: Context) -> str:
    """Report progress, log a line, then answer."""
    log({"tool": "slow"})
    for step in range(1, 4):
        await ctx.report_progress(step, 3, f"step {step}")
    await ctx.info("halfway there")
    return "done"


def roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def where(listed: Annotated[mcp_types.ListRootsResult, Resolve(roots)]) -> str:
    """The client's roots."""
    log({"tool": "where"})
    return " ".join(str(root.uri) for root in listed.roots)


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Say that the resource ``uri`` changed."""
    log({"tool": "touch"})
    if (ctx.protocol_version or "") >= "2026-07-28":
        await ctx.notify_resource_updated(uri)
    else:
        await ctx.session.send_resource_updated(uri)  # type: ignore[arg-type]
    return "touched"


@server.resource("note://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    """A short note."""
    return "hello from a resource"


@server.resource("blob://dot", name="dot", mime_type="image/png")
def dot() -> bytes:
    """A tiny picture."""
    return b"\x89PNG\r\n\x1a\n"


@server.prompt()
def greet(name: str) -> list[UserMessage | AssistantMessage]:
    """Greet someone."""
    return [UserMessage(f"Please greet {name}."), AssistantMessage(f"Hello, {name}!")]


async def subscribed(
    ctx: object, params: mcp_types.SubscribeRequestParams
) -> mcp_types.EmptyResult:
    log({"subscribed": str(params.uri)})
    return mcp_types.EmptyResult()


# the 2025 era's resources/subscribe (MCPServer has no decorator for it)
server._lowlevel_server.add_request_handler(
    "resources/subscribe", mcp_types.SubscribeRequestParams, subscribed
)


if __name__ == "__main__":
    server.run("stdio")
