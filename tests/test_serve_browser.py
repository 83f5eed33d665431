"""The page in a real headless browser: Debian's chromium driven by playwright.

Nothing downloads a browser: playwright is given ``/usr/bin/chromium``
(``tests/browser_support.py``). The model is a replay routed by prompt
(``tests/serve_support.py``); the screenshot is saved in the test's temp dir (or
``ZETT_SCREENSHOT_DIR``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")
pytest.importorskip("playwright", reason="playwright is not installed")

from browser_support import CHROMIUM, chromium, has_chromium, screenshot_dir
from serve_support import make_agent, running_server, scenario_reply
from zett_agent.serve import ServeSettings, create_app
from zett_agent.testing import ReplayServer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not has_chromium(), reason=f"no chromium at {CHROMIUM} (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def page_url() -> Iterator[str]:
    with ReplayServer(route=scenario_reply) as replay:
        app = create_app(make_agent(replay.url, max_tokens=5), owns=True)
        with running_server(app) as url:
            yield url


@pytest.fixture
def browser_page() -> Iterator[object]:
    with chromium() as browser:
        yield browser.new_page(viewport={"width": 1100, "height": 800})


def ask(page: object, text: str) -> None:
    page.fill("#prompt", text)  # type: ignore[attr-defined]
    page.click("#send")  # type: ignore[attr-defined]


def test_page_shows_refusal_and_cut_off_notices_and_resume(
    page_url: str, browser_page: object, tmp_path: Path
) -> None:
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))  # type: ignore[attr-defined]
    page.goto(page_url)  # type: ignore[attr-defined]
    # selectors, not JS expressions: the page's CSP forbids eval, as it should
    page.wait_for_selector("#model:has-text('tools')")  # type: ignore[attr-defined]
    assert "get_weather" in page.text_content("#model")  # type: ignore[attr-defined]

    ask(page, "please refuse")
    refusal = page.wait_for_selector(".stop-refusal")  # type: ignore[attr-defined]
    assert "refusal" in refusal.text_content()
    assert refusal.query_selector("button.resume") is None  # a refusal cannot be resumed
    assert "I'm sorry, I can't assist" in page.text_content("#messages")  # type: ignore[attr-defined]

    page.wait_for_selector("#send:not([disabled])")  # type: ignore[attr-defined]
    ask(page, "cut")
    cut = page.wait_for_selector(".stop-max_output")  # type: ignore[attr-defined]
    assert "max_output (length)" in cut.text_content()
    resume_button = cut.query_selector("button.resume")
    assert resume_button is not None
    # only the last stop offers Resume
    assert len(page.query_selector_all("button.resume")) == 1  # type: ignore[attr-defined]

    page.wait_for_selector("#sessions li")  # type: ignore[attr-defined]
    shot = screenshot_dir(tmp_path) / "serve-page.png"
    page.screenshot(path=str(shot), full_page=True)  # type: ignore[attr-defined]
    print(f"screenshot: {shot}")

    page.click("button.resume")  # type: ignore[attr-defined]
    page.wait_for_selector("#messages :text('You said: Continue')")  # type: ignore[attr-defined]
    page.wait_for_selector("#send:not([disabled])")  # type: ignore[attr-defined]
    assert page.query_selector_all("button.resume") == []  # type: ignore[attr-defined]
    assert errors == []


def test_page_shows_tool_calls_and_withheld_calls(page_url: str, browser_page: object) -> None:
    page = browser_page
    page.goto(page_url)  # type: ignore[attr-defined]
    ask(page, "weather in Paris?")
    page.wait_for_selector(".tool .result:not(.dim)")  # type: ignore[attr-defined]
    tool = page.text_content(".tool")  # type: ignore[attr-defined]
    assert "get_weather" in tool and "Paris" in tool and "light rain" in tool
    page.wait_for_selector("#send:not([disabled])")  # type: ignore[attr-defined]
    ask(page, "interrupt")
    notice = page.wait_for_selector(".stop-interrupted")  # type: ignore[attr-defined]
    assert "Withheld tool calls (not run): get_weather" in notice.text_content()
    assert len(page.query_selector_all(".tool")) == 1  # type: ignore[attr-defined]
    page.wait_for_selector("#send:not([disabled])")  # type: ignore[attr-defined]
    ask(page, "think first")
    page.wait_for_selector(".message:last-child .text")  # type: ignore[attr-defined]
    page.wait_for_selector("#send:not([disabled])")  # type: ignore[attr-defined]
    reasoning = page.text_content(".reasoning")  # type: ignore[attr-defined]
    assert reasoning.startswith("Hmm, the user just said")


def test_stop_button_cancels_and_the_partial_answer_is_kept(
    page_url: str, browser_page: object
) -> None:
    page = browser_page
    page.goto(page_url)  # type: ignore[attr-defined]
    ask(page, "slow")
    page.wait_for_selector("#messages :text('word2')")  # type: ignore[attr-defined]
    page.click("#stop")  # type: ignore[attr-defined]
    notice = page.wait_for_selector(".stop-interrupted")  # type: ignore[attr-defined]
    assert "cancelled" in notice.text_content()
    assert notice.query_selector("button.resume") is not None
    assert "word39" not in page.text_content("#messages")  # type: ignore[attr-defined]


def test_page_takes_the_token_from_the_url_fragment(browser_page: object) -> None:
    page = browser_page
    with ReplayServer(route=scenario_reply) as replay:
        app = create_app(make_agent(replay.url), settings=ServeSettings(token="t0k3n"))
        with running_server(app) as url:
            page.goto(url)  # type: ignore[attr-defined]
            page.wait_for_selector("#model:has-text('bearer token')")  # type: ignore[attr-defined]
            page.goto(f"{url}/#token=t0k3n")  # type: ignore[attr-defined]
            page.wait_for_selector("#model:has-text('tools')")  # type: ignore[attr-defined]
            assert "token" not in page.url  # type: ignore[attr-defined]
            ask(page, "cut")
            page.wait_for_selector(".stop-max_output")  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def approval_url() -> Iterator[str]:
    with ReplayServer(route=scenario_reply) as replay:
        agent = make_agent(replay.url, approval=lambda call: call.name == "get_weather")
        with running_server(create_app(agent, owns=True)) as url:
            yield url


def test_page_approves_a_waiting_call_after_a_reload(
    approval_url: str, browser_page: object, tmp_path: Path
) -> None:
    page = browser_page
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))  # type: ignore[attr-defined]
    page.goto(approval_url)  # type: ignore[attr-defined]
    ask(page, "weather in Paris?")
    page.wait_for_selector("button.approve")  # type: ignore[attr-defined]
    page.wait_for_selector("#send:not([disabled])")  # type: ignore[attr-defined]
    assert "?chat=" in page.url  # type: ignore[attr-defined]
    page.reload()  # type: ignore[attr-defined]
    # the chat it showed, reopened by the reload itself (no click in the side bar)
    page.wait_for_selector("button.approve")  # restored, still waiting  # type: ignore[attr-defined]
    assert "weather in Paris?" in page.text_content("#messages")  # type: ignore[attr-defined]
    shot = screenshot_dir(tmp_path) / "page-approval-waiting.png"
    page.screenshot(path=str(shot), full_page=True)  # type: ignore[attr-defined]
    print(f"screenshot: {shot}")
    page.click("button.approve")  # type: ignore[attr-defined]
    page.wait_for_selector("#messages :text('It is light rain in Paris')")  # type: ignore[attr-defined]
    tool = page.text_content(".tool")  # type: ignore[attr-defined]
    assert "light rain" in tool and "Approve" not in tool
    assert len(page.query_selector_all(".message.assistant")) == 1  # type: ignore[attr-defined]
    shot = screenshot_dir(tmp_path) / "page-approval-approved.png"
    page.screenshot(path=str(shot), full_page=True)  # type: ignore[attr-defined]
    print(f"screenshot: {shot}")
    assert errors == []


def test_a_chat_id_in_the_url_that_is_not_stored_opens_a_new_chat(
    approval_url: str, browser_page: object
) -> None:
    page = browser_page
    page.goto(approval_url + "?chat=never-stored")  # type: ignore[attr-defined]
    page.wait_for_selector("#status:has-text('is not stored')")  # type: ignore[attr-defined]
    assert "?chat=" not in page.url  # type: ignore[attr-defined]
    assert page.query_selector_all(".message") == []  # type: ignore[attr-defined]
    page.click("#new-chat")  # type: ignore[attr-defined]
    assert "?chat=" not in page.url  # type: ignore[attr-defined]


def test_page_denies_a_waiting_call(approval_url: str, browser_page: object) -> None:
    page = browser_page
    page.goto(approval_url)  # type: ignore[attr-defined]
    ask(page, "weather in Paris?")
    page.click("button.deny")  # type: ignore[attr-defined]
    denied = page.wait_for_selector(".result.denied")  # type: ignore[attr-defined]
    assert denied.text_content() == "✖ Denied: denied on the page (not run)"
    page.wait_for_selector("#messages :text('I did not check the weather')")  # type: ignore[attr-defined]


def test_page_shows_what_kind_of_failure_a_failed_run_was(
    page_url: str, browser_page: object
) -> None:
    page = browser_page
    page.goto(page_url)  # type: ignore[attr-defined]
    ask(page, "fail")
    notice = page.wait_for_selector(".error-notice")  # type: ignore[attr-defined]
    assert notice.text_content().startswith("Authentication failed")
    assert "secret" not in page.text_content("#messages")  # type: ignore[attr-defined]


def test_page_attaches_an_image_and_shows_it_again_after_reopening_the_session(
    browser_page: object, tmp_path: Path
) -> None:
    """The attach button sends an image as the AI SDK's file part (a data URL); the
    model gets it; reopening the session shows it from the server's stored part,
    fetched with the bearer token (the page's CSP allows only data: and blob: images)."""
    page = browser_page
    png = tmp_path / "dot.png"
    png.write_bytes(TINY_PNG)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))  # type: ignore[attr-defined]
    with ReplayServer(route=scenario_reply) as replay:
        app = create_app(make_agent(replay.url), settings=ServeSettings(token="t0k3n"))
        with running_server(app) as url:
            page.goto(f"{url}/#token=t0k3n")  # type: ignore[attr-defined]
            page.wait_for_selector("#model:has-text('tools')")  # type: ignore[attr-defined]
            assert "image/png" in page.get_attribute("#attach", "accept")  # type: ignore[attr-defined]
            page.set_input_files("#attach", str(png))  # type: ignore[attr-defined]
            assert "dot.png" in page.text_content("#attachments")  # type: ignore[attr-defined]
            ask(page, "What is in this picture?")
            page.wait_for_selector(  # type: ignore[attr-defined]
                "#messages :text('You said: What is in this picture? (1 image)')"
            )
            sent = page.get_attribute(".message.user img.attachment", "src")  # type: ignore[attr-defined]
            assert sent.startswith("data:image/png;base64,")
            assert page.text_content("#attachments") == ""  # type: ignore[attr-defined]
            page.wait_for_selector("#send:not([disabled])")  # type: ignore[attr-defined]
            page.click("#new-chat")  # type: ignore[attr-defined]
            page.click("#sessions li")  # type: ignore[attr-defined]
            page.wait_for_selector(".message.user img.attachment[src^='blob:']")  # type: ignore[attr-defined]
            width = page.evaluate(  # type: ignore[attr-defined]
                "document.querySelector('.message.user img.attachment').naturalWidth"
            )
            page.screenshot(path=str(tmp_path / "serve-attachment.png"), full_page=True)  # type: ignore[attr-defined]
            print(f"screenshot: {tmp_path / 'serve-attachment.png'}")
        [request] = replay.requests
    assert width == 1  # the stored bytes, decoded by the browser: the 1x1 PNG
    image = request.json["messages"][0]["content"][1]
    assert image == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(TINY_PNG).decode()},
    }
    assert errors == []


# a 1x1 red PNG
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
