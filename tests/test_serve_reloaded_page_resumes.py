"""A stock ``useChat({ resume: true })`` page reloaded mid-answer ends with the answer
an uninterrupted page got, in a real headless chromium.

The page is ``tests/stock_page`` with ``?resume=1`` (the AI SDK's resume guide: its
Stop also posts ``/api/chat/{id}/stop``), against ``zett serve`` with
``ServeSettings(resumable=True)`` and a replayed model that streams slowly
(``tests/resume_support.py``). Per answer (a long text, one with a tool call, one
that ends in a refusal), a page that is reloaded 20 times at seeded random points
must end with the whole UI message (parts, their states, metadata) of a page that
was never reloaded; an approval asked while the page was away is shown and can be
decided, and the run that goes on after it is rejoined the same way; Stop after a
resume stops the run.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")
pytest.importorskip("playwright", reason="playwright is not installed")

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from resume_support import resume_reply, waits
from serve_support import make_agent, running_server
from test_serve_stock_page import TIMEOUT, Tab, browser, bundle, pytestmark  # noqa: F401
from zett_agent.serve import ServeSettings, create_app
from zett_agent.sessions import InMemorySessionStore
from zett_agent.testing import ReplayServer

pytestmark = [*pytestmark, pytest.mark.slow]

RELOADS = 20
LONG = 60_000  # ms: a whole answer takes a few seconds


@pytest.fixture(scope="module")
def site(bundle: Path) -> Iterator[str]:  # noqa: F811
    with ReplayServer(route=resume_reply) as replay:
        agent = make_agent(replay.url, approval=waits)
        zett = create_app(agent, InMemorySessionStore(), ServeSettings(resumable=True), owns=True)

        @contextlib.asynccontextmanager
        async def lifespan(app: Starlette) -> AsyncIterator[None]:
            async with zett.router.lifespan_context(zett):
                yield

        app = Starlette(
            routes=[Mount("/stock", StaticFiles(directory=bundle, html=True)), Mount("/", zett)],
            lifespan=lifespan,
        )
        with running_server(app) as url:
            yield url


def open_page(browser: Any, url: str, chat_id: str, tmp_path: Path) -> Tab:  # noqa: F811
    return Tab(browser, f"{url}/stock/?chat={chat_id}&resume=1", tmp_path)


def settled(tab: Tab) -> dict[str, Any]:
    """The page's assistant message once the answer has ended (``finish`` shown,
    not busy), whole; one user message before it."""
    tab.page.wait_for_selector(".message.assistant .finish", timeout=LONG)
    tab.page.wait_for_selector(".status:text-matches('^(ready|error)$')", timeout=LONG)
    messages: list[dict[str, Any]] = json.loads(
        tab.page.evaluate("JSON.stringify(window.chatMessages)")
    )
    assert [m["role"] for m in messages] == ["user", "assistant"]
    return messages[-1]


def reload_at_random(tab: Tab, rng: random.Random, reloads: int = RELOADS) -> int:
    """Reload the page ``reloads`` times, each after a random pause; how many of the
    reloads landed while the answer was still streaming."""
    mid = 0
    for _ in range(reloads):
        time.sleep(rng.uniform(0.02, 0.3))
        mid += tab.count(".stop-button") > 0
        tab.page.reload()
        tab.page.wait_for_selector("form", timeout=TIMEOUT)
    return mid


@pytest.mark.parametrize(
    ("question", "seed"),
    [("a long answer", 1), ("a tool call please", 2), ("please refuse", 3)],
)
def test_reloads_at_random_points_end_with_the_uninterrupted_message(
    site: str,
    browser: Any,  # noqa: F811
    tmp_path: Path,
    question: str,
    seed: int,
) -> None:
    key = question.split()[-1]
    calm = open_page(browser, site, f"calm-{key}", tmp_path)
    calm.ask(question)
    expected = settled(calm)

    tab = open_page(browser, site, f"reloaded-{key}", tmp_path)
    tab.ask(question)
    tab.page.wait_for_selector(".message.assistant", timeout=TIMEOUT)
    mid = reload_at_random(tab, random.Random(seed))
    got = settled(tab)
    assert mid >= RELOADS // 2  # most reloads cut the answer
    assert got == expected
    assert tab.errors == []
    tab.reload()  # and the stored session says the same
    assert settled(tab) == expected


def test_an_approval_asked_while_away_is_shown_and_decided(
    site: str,
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    calm = open_page(browser, site, "calm-oslo", tmp_path)
    calm.ask("weather in oslo")
    calm.page.click("button.approve", timeout=LONG)
    expected = settled(calm)

    tab = open_page(browser, site, "away-oslo", tmp_path)
    tab.ask("weather in oslo")
    tab.page.wait_for_selector(".message.assistant", timeout=TIMEOUT)
    rng = random.Random(4)
    reload_at_random(tab, rng, 5)
    tab.page.click("button.approve", timeout=LONG)
    tab.page.wait_for_selector(".tool.output-available", timeout=TIMEOUT)
    assert reload_at_random(tab, rng, 4) >= 2  # the run after the approval is rejoined too
    assert without_run_ids(settled(tab)) == without_run_ids(expected)


def without_run_ids(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with each ``approval.id`` cut to its call id (the run id after
    ``@`` differs from run to run)."""
    for part in message["parts"]:
        if "approval" in part:
            part["approval"]["id"] = part["approval"]["id"].split("@")[0]
    return message


def test_stop_after_a_resume_stops_the_run(
    site: str,
    browser: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    tab = open_page(browser, site, "stop-after-resume", tmp_path)
    tab.ask("a long answer")
    tab.page.wait_for_selector(".message.assistant", timeout=TIMEOUT)
    tab.page.reload()
    tab.page.wait_for_selector(".message.assistant .text", timeout=TIMEOUT)
    tab.page.click("button.stop-button", timeout=TIMEOUT)
    tab.page.wait_for_selector(".status:text-is('ready')", timeout=TIMEOUT)
    tab.reload()
    stored = tab.page.evaluate("fetch('/api/sessions/stop-after-resume').then(r => r.json())")
    tab.wait(".stop:text-matches('^Stopped: interrupted')")
    assert stored["running"] is False
    text = stored["messages"][-1]["parts"][1]["text"]
    assert not text.endswith("word159")
    assert tab.errors == []
