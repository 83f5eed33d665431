"""``zett serve`` takes the AI SDK's file parts: new parts from the last message only,
earlier data URLs a stock transport re-sends are ignored (the stored parts win), the
attachment limit is judged before decoding, a restored session shows its parts as
files this server serves (sandboxed), and a regenerated turn of a restored chat takes
the stored part. A real uvicorn server and a replayed OpenAI Chat model."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import make_agent, read_chunks, running_server, scenario_reply
from zett_agent import Agent, ImagePart, Model, UserMessage
from zett_agent.serve import ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 80  # over the blob threshold
OTHER = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode()}"


def file_part(data: bytes = PNG, name: str = "dot.png", **extra: Any) -> dict[str, Any]:
    return {"type": "file", "mediaType": "image/png", "filename": name, "url": data_url(data)}


def user(message_id: str, text: str, *files: dict[str, Any]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    return {"id": message_id, "role": "user", "parts": [*parts, *files]}


@pytest.fixture(scope="module")
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(route=scenario_reply) as server:
        yield server


@pytest.fixture
def url(replay: ReplayServer) -> Iterator[str]:
    settings = ServeSettings(max_attachment_bytes=64 * 1024)
    app = create_app(make_agent(replay.url), InMemorySessionStore(), settings, owns=True)
    with running_server(app) as url:
        yield url


def post(url: str, chat_id: str, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    body = {"id": chat_id, "messages": messages, "trigger": "submit-message", **extra}
    return httpx.post(f"{url}/api/chat", json=body, timeout=30)


def answer_text(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    chunks = read_chunks(response.text)
    return "".join(c["delta"] for c in chunks if c["type"] == "text-delta")


def image_urls_sent(replay: ReplayServer, count: int) -> list[list[str]]:
    """The image URLs of the user turns of the last ``count`` model requests."""
    out = []
    for request in replay.requests[-count:]:
        urls = []
        for message in request.json["messages"]:
            if message["role"] == "user" and isinstance(message["content"], list):
                urls += [p["image_url"]["url"] for p in message["content"] if "image_url" in p]
        out.append(urls)
    return out


def test_a_file_part_reaches_the_model_and_the_session(url: str, replay: ReplayServer) -> None:
    first = user("u-1", "What is in this picture?", file_part())
    assert answer_text(post(url, "pics", [first])) == "You said: What is in this picture? (1 image)"
    assert image_urls_sent(replay, 1) == [[data_url(PNG)]]

    # the stock transport re-sends every earlier message each turn: with another data
    # URL in the first message here, the stored part still wins
    resent = user("u-1", "What is in this picture?", file_part(OTHER))
    second = user("u-2", "And its colour?")
    assert answer_text(
        post(url, "pics", [resent, {"id": "a", "role": "assistant", "parts": []}, second])
    )
    assert image_urls_sent(replay, 1) == [[data_url(PNG)]]  # the stored bytes, not OTHER

    session = httpx.get(f"{url}/api/sessions/pics", timeout=10).json()
    digest = ImagePart(media_type="image/png", data=PNG).sha256
    assert session["messages"][0]["parts"] == [
        {"type": "text", "text": "What is in this picture?"},
        {
            "type": "file",
            "mediaType": "image/png",
            "url": f"/api/sessions/pics/parts/{digest}",
            "filename": "dot.png",
        },
    ]
    served_part = httpx.get(f"{url}/api/sessions/pics/parts/{digest}", timeout=10)
    assert served_part.status_code == 200 and served_part.content == PNG
    assert served_part.headers["content-type"] == "image/png"
    assert served_part.headers["content-security-policy"] == "sandbox; default-src 'none'"
    assert served_part.headers["x-content-type-options"] == "nosniff"
    assert httpx.get(f"{url}/api/sessions/other/parts/{digest}", timeout=10).status_code == 404


def test_a_regenerated_turn_of_a_restored_chat_takes_the_stored_part(
    url: str, replay: ReplayServer
) -> None:
    assert answer_text(post(url, "regen", [user("u-1", "Look", file_part())]))
    restored = httpx.get(f"{url}/api/sessions/regen", timeout=10).json()["messages"]
    again = post(url, "regen", restored[:1], trigger="regenerate-message")
    assert answer_text(again) == "You said: Look (1 image)"
    # the question asked again (the earlier answer stays in history), with the stored part
    assert image_urls_sent(replay, 1) == [[data_url(PNG), data_url(PNG)]]
    stolen = dict(restored[0], parts=[dict(restored[0]["parts"][1])])
    stolen["parts"][0]["url"] = stolen["parts"][0]["url"].replace("/regen/", "/pics/")
    refused = post(url, "regen", [stolen])
    assert refused.status_code == 400
    assert "another session's part" in refused.json()["error"]["message"]


def test_an_image_alone_is_a_question(url: str) -> None:
    assert answer_text(post(url, "alone", [user("u-1", "", file_part())])) == "You said:  (1 image)"


@pytest.mark.parametrize(
    ("part", "status", "message"),
    [
        (file_part(b"\x89PNG\r\n\x1a\n" + b"0" * 70_000), 413, "larger than 65536 bytes in all"),
        (
            {"type": "file", "mediaType": "image/png", "url": "/etc/passwd"},
            400,
            "https, http or gs",
        ),
        ({"type": "file", "mediaType": "image/png", "url": "data:image/png,raw"}, 400, "base64"),
        ({"type": "file", "url": data_url(PNG)}, 400, "a url and a mediaType"),
        (
            {"type": "file", "mediaType": "image/png", "url": "https://u:p@example.com/a.png"},
            400,
            "user name or password",
        ),
    ],
)
def test_bad_file_parts_are_refused_and_nothing_is_stored(
    url: str, part: dict[str, Any], status: int, message: str
) -> None:
    response = post(url, "bad", [user("u-1", "Look", part)])
    assert response.status_code == status, response.text
    assert message in response.json()["error"]["message"]
    assert httpx.get(f"{url}/api/sessions/bad", timeout=10).status_code == 404


def test_two_files_share_the_attachment_limit(url: str) -> None:
    half = b"\x89PNG\r\n\x1a\n" + b"1" * 40_000
    response = post(url, "two", [user("u-1", "Look", file_part(half), file_part(half, "b.png"))])
    assert response.status_code == 413


def test_the_chat_body_limit_is_its_own_and_the_info_names_the_attachments(
    replay: ReplayServer,
) -> None:
    settings = ServeSettings(max_body_bytes=4096, max_chat_body_bytes=200_000)
    with running_server(create_app(make_agent(replay.url), settings=settings)) as url:
        ok = post(url, "limit", [user("u-1", "Look", file_part())])  # 27 KB: over 4096
        assert ok.status_code == 200
        info = httpx.get(f"{url}/api/info", timeout=10).json()["attachments"]
        assert info["max_bytes"] == settings.max_attachment_bytes
        assert "image/png" in info["media_types"] and "application/pdf" in info["media_types"]
        big = post(url, "limit", [user("u-1", "Look", file_part(PNG * 10))])
        assert big.status_code == 413


def test_the_local_model_offers_no_attachments_and_refuses_one() -> None:
    model = Model("llamacpp", "smollm2", base_url="http://127.0.0.1:9/v1", api_key="x")
    with running_server(create_app(Agent(model), owns=True)) as url:
        info = httpx.get(f"{url}/api/info", timeout=10).json()["attachments"]
        assert info["media_types"] == []
        assert "cannot see images" in info["note"]
        response = post(url, "local", [user("u-1", "Look", file_part())])
        assert response.status_code == 422  # before anything is stored or sent
        assert "it cannot see images" in response.json()["error"]["message"]
        assert httpx.get(f"{url}/api/sessions/local", timeout=10).status_code == 404


async def test_parts_of_stored_tool_results_are_served_too() -> None:
    store = InMemorySessionStore()
    from zett_agent import ToolResultMessage
    from zett_agent.serve._attachments import stored_part

    part = ImagePart(media_type="image/png", data=PNG)
    await store.append("t", UserMessage("draw"))
    await store.append("t", ToolResultMessage("c1", "draw", part.describe(), parts=(part,)))
    rows = await store.rows("t")
    found = stored_part([row.message for row in rows], part.sha256 or "")
    assert found == part and await found.read() == PNG
