"""A stock ``useChat`` page against ``zett serve``, in a real headless chromium.

``tests/stock_page/`` is what a new user of the AI SDK writes: React, ``useChat``
from ``@ai-sdk/react`` with the default transport, ``addToolApprovalResponse`` and
``sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses``, the
stored session as the initial messages, the chat id in the URL. Pinned by its
``package-lock.json`` and bundled with esbuild (``npm ci`` there; this module bundles
it into a temporary folder, so the page tested is always the source's). The page is
served beside the zett app, same origin, as a host that mounts ``create_app`` does.

Scenarios: approve, deny, reload while waiting then approve, Stop (useChat's
``stop()``), two tabs approving the same call (one server, and two servers over one
SQLite file), and a second turn after each kind of stop. Screenshots go to the
test's temporary folder (or ``ZETT_SCREENSHOT_DIR``).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")
pytest.importorskip("playwright", reason="playwright is not installed")

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from browser_support import CHROMIUM, chromium, has_chromium, screenshot_dir
from serve_support import FINAL_DENIED, FINAL_WEATHER, make_agent, running_server, scenario_reply
from test_serve_approvals import OverlappingReads
from zett_agent.serve import create_app
from zett_agent.sessions import InMemorySessionStore, SessionStore
from zett_agent.testing import ReplayServer

PAGE_DIR = Path(__file__).parent / "stock_page"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not has_chromium(), reason=f"no chromium at {CHROMIUM} (apt-get install chromium)"
    ),
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (PAGE_DIR / "node_modules" / "@ai-sdk" / "react" / "package.json").exists(),
        reason="the stock page's packages are not installed: run `npm ci` in tests/stock_page",
    ),
]

TIMEOUT = 15_000  # ms, for each wait on the page


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page bundled by its own build script (esbuild), into a fresh folder."""
    out = tmp_path_factory.mktemp("stock_page")
    done = subprocess.run(
        [str(NODE), "build.mjs", str(out)],
        cwd=PAGE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out


def waits(call: Any) -> bool:
    return call.name == "get_weather"


def host_app(bundle: Path, store: SessionStore, replay_url: str) -> Starlette:
    """The page at ``/stock/`` and zett at ``/``: one origin, as a host mounting
    ``create_app`` serves its own front end."""
    zett = create_app(make_agent(replay_url, approval=waits), store, owns=True)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with zett.router.lifespan_context(zett):
            yield

    return Starlette(
        routes=[
            Mount("/stock", StaticFiles(directory=bundle, html=True)),
            Mount("/", zett),
        ],
        lifespan=lifespan,
    )


@pytest.fixture(scope="module")
def site(bundle: Path) -> Iterator[tuple[str, ReplayServer]]:
    with ReplayServer(route=scenario_reply) as replay:
        app = host_app(bundle, InMemorySessionStore(), replay.url)
        with running_server(app) as url:
            yield url, replay


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as opened:
        yield opened


class Tab:
    """One browser tab on the stock page; page errors are collected."""

    def __init__(self, browser: Any, url: str, shots: Path) -> None:
        self.page = browser.new_page(viewport={"width": 900, "height": 700})
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.url = url
        self.shots = shots
        self.page.goto(url)
        self.ready()

    def ready(self) -> None:
        self.page.wait_for_selector("form", timeout=TIMEOUT)
        self.page.wait_for_selector(".status:text-is('ready')", timeout=TIMEOUT)

    def ask(self, text: str) -> None:
        self.page.fill("input", text)
        self.page.click("button[type=submit]")

    def wait(self, selector: str) -> Any:
        return self.page.wait_for_selector(selector, timeout=TIMEOUT)

    def idle(self) -> None:
        self.page.wait_for_selector(".status:text-matches('^(ready|error)$')", timeout=TIMEOUT)

    def text(self, selector: str = "main") -> str:
        return str(self.page.text_content(selector))

    def last_finish(self) -> str:
        """The finish reason the last assistant message shows (its metadata)."""
        last = self.page.locator(".message.assistant").last
        return str(last.locator(".finish").text_content(timeout=TIMEOUT))

    def count(self, selector: str) -> int:
        return len(self.page.query_selector_all(selector))

    def shot(self, name: str) -> Path:
        path = self.shots / f"stock-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
        return path

    def reload(self) -> None:
        self.page.reload()
        self.ready()


def open_chat(browser: Any, base: str, chat_id: str, tmp_path: Path) -> Tab:
    return Tab(browser, f"{base}/stock/?chat={chat_id}", screenshot_dir(tmp_path))


def test_approve_from_a_stock_page(
    site: tuple[str, ReplayServer], browser: Any, tmp_path: Path
) -> None:
    url, replay = site
    tab = open_chat(browser, url, "approve", tmp_path)
    tab.ask("weather in Paris?")
    tab.wait("button.approve")
    assert tab.count(".tool.approval-requested") == 1
    tab.shot("approve-1-waiting")
    calls = len(replay.requests)
    tab.page.click("button.approve")
    tab.wait(f".message.assistant .text:text-is('{FINAL_WEATHER}')")
    tab.idle()
    assert tab.count(".tool") == 1  # the same part went on, no second message
    assert tab.count(".message.assistant") == 1
    assert "light rain" in tab.text(".tool.output-available .output")
    assert tab.last_finish() == "finish: stop"
    assert len(replay.requests) == calls + 1
    assert tab.count(".error") == 0
    tab.shot("approve-2-done")
    tab.ask("thanks")
    tab.wait(".text:text-is('You said: thanks')")
    assert tab.errors == []


def test_deny_from_a_stock_page(
    site: tuple[str, ReplayServer], browser: Any, tmp_path: Path
) -> None:
    url, _ = site
    tab = open_chat(browser, url, "deny", tmp_path)
    tab.ask("weather in Paris?")
    tab.wait("button.deny")
    tab.page.click("button.deny")
    tab.wait(f".text:text-is('{FINAL_DENIED}')")
    tab.idle()
    assert tab.text(".tool.output-denied .output") == "Denied: not now"
    assert tab.count(".tool.output-error") == 0
    tab.shot("deny")
    tab.reload()  # the stored session draws the same
    tab.wait(".tool.output-denied")
    assert tab.text(".tool.output-denied .output") == "Denied: not now"
    tab.ask("and now?")
    tab.wait(".text:text-is('You said: and now?')")
    assert tab.errors == []


def test_reload_while_waiting_then_approve(
    site: tuple[str, ReplayServer], browser: Any, tmp_path: Path
) -> None:
    url, _ = site
    tab = open_chat(browser, url, "reload", tmp_path)
    tab.ask("weather in Paris?")
    tab.wait("button.approve")
    tab.idle()
    tab.reload()
    tab.wait("button.approve")  # restored as approval-requested, with its approval id
    tab.shot("reload-1-restored-waiting")
    tab.page.click("button.approve")
    tab.wait(f".text:text-is('{FINAL_WEATHER}')")
    tab.idle()
    assert tab.count(".message.assistant") == 1
    assert tab.count(".tool.output-available") == 1
    assert tab.count(".error") == 0
    tab.shot("reload-2-approved")
    tab.reload()
    tab.wait(f".text:text-is('{FINAL_WEATHER}')")
    assert tab.count(".tool.output-available") == 1
    assert tab.last_finish() == "finish: stop"
    assert tab.errors == []


def race(first: Tab, second: Tab) -> None:
    """Both tabs show the waiting call; Approve is clicked in one, then at once in
    the other."""
    for tab in (first, second):
        tab.wait("button.approve")
    first.page.click("button.approve")
    second.page.click("button.approve")


def test_two_tabs_approving_the_same_call_one_wins(
    site: tuple[str, ReplayServer], browser: Any, tmp_path: Path
) -> None:
    url, replay = site
    winner = open_chat(browser, url, "tabs", tmp_path)
    winner.ask("weather in Paris?")
    winner.wait("button.approve")
    winner.idle()
    loser = open_chat(browser, url, "tabs", tmp_path)
    calls = len(replay.requests)
    race(winner, loser)
    winner.wait(f".text:text-is('{FINAL_WEATHER}')")
    error = loser.wait(".error")
    assert "409" in error.text_content()
    loser.shot("tabs-1-loser-error")
    winner.shot("tabs-1-winner")
    assert len(replay.requests) == calls + 1  # the call ran once
    loser.reload()
    loser.wait(f".text:text-is('{FINAL_WEATHER}')")
    assert loser.count(".tool.output-available") == 1
    assert loser.count(".error") == 0
    loser.shot("tabs-2-loser-reloaded")
    assert winner.errors == [] and loser.errors == []


def test_two_tabs_on_two_servers_approving_the_same_call_one_wins(
    bundle: Path, browser: Any, tmp_path: Path
) -> None:
    db = tmp_path / "sessions.db"
    stores = [OverlappingReads(db), OverlappingReads(db)]
    with ReplayServer(route=scenario_reply) as replay:
        apps = [host_app(bundle, store, replay.url) for store in stores]
        with running_server(apps[0]) as one, running_server(apps[1]) as two:
            first = open_chat(browser, one, "replicas", tmp_path)
            first.ask("weather in Paris?")
            first.wait("button.approve")
            first.idle()
            second = open_chat(browser, two, "replicas", tmp_path)
            calls = len(replay.requests)
            for store in stores:
                store.overlap = 0.5  # both servers read the call as waiting
            race(first, second)
            for tab in (first, second):
                tab.wait(f".text:text-is('{FINAL_WEATHER}'), .error")
            for store in stores:
                store.overlap = 0.0
            outcomes = sorted(tab.count(".error") for tab in (first, second))
            assert outcomes == [0, 1]  # one tab shows the SDK's error
            assert len(replay.requests) == calls + 1  # the call ran once
            [loser] = [tab for tab in (first, second) if tab.count(".error")]
            assert "409" in loser.text(".error")
            loser.shot("replicas-loser-error")
            loser.reload()
            loser.wait(f".text:text-is('{FINAL_WEATHER}')")
            assert loser.count(".tool.output-available") == 1


def test_stop_keeps_the_answer_so_far_and_a_second_turn_follows(
    site: tuple[str, ReplayServer], browser: Any, tmp_path: Path
) -> None:
    url, _ = site
    tab = open_chat(browser, url, "cancel", tmp_path)
    tab.ask("slow")
    tab.wait(".text:text-matches('word2')")
    tab.page.click("button.stop-button")  # useChat's stop(): the request is aborted
    tab.idle()
    assert "word39" not in tab.text()
    tab.ask("next question")
    tab.wait(".text:text-is('You said: next question')")
    tab.idle()
    tab.reload()  # the server kept the cut answer as interrupted (cancelled)
    tab.wait(".stop:text-matches('^Stopped: interrupted')")
    assert "cancelled" in tab.text(".stop")
    assert tab.count(".message.assistant") == 2
    tab.shot("cancel-reloaded")
    assert tab.errors == []


STOPS = [
    ("please refuse", ".stop:text-matches('^Stopped: refusal')", "content-filter"),
    ("cut", ".stop:text-matches('^Stopped: max_output')", "length"),
    ("interrupt", ".stop:text-matches('^Stopped: interrupted')", "interrupted"),
    ("cut-call", ".tool.output-error", "stop"),
    ("fail", ".error:text-matches('Authentication failed')", None),
]
"""A prompt, what the page shows for its stop, and the finish the message shows."""


def test_a_second_turn_after_each_kind_of_stop(
    site: tuple[str, ReplayServer], browser: Any, tmp_path: Path
) -> None:
    url, _ = site
    tab = open_chat(browser, url, "stops", tmp_path)
    for n, (prompt, shown, finish) in enumerate(STOPS):
        tab.ask(prompt)
        tab.wait(shown)
        tab.idle()
        if finish is not None:
            assert tab.last_finish() == f"finish: {finish}"
        else:  # a run that failed before any output: the error, no empty message
            assert tab.count(".message.assistant") == 2 * n
            tab.shot("stops-failed")
        follow = f"next question {n}"  # routed to a plain answer
        tab.ask(follow)
        tab.wait(f".text:text-is('You said: {follow}')")
        tab.idle()
        assert tab.count(".error") == 0  # a new turn clears the failed one's error
    assert tab.count(".message.user") == 2 * len(STOPS)
    tab.shot("stops")
    assert "withheld" not in tab.text()  # the interrupted call never became a tool part
    assert tab.count(".tool") == 1  # only the cut call, as an error
    assert tab.errors == []
