"""Shared by the browser tests: Debian's chromium driven by playwright.

Nothing downloads a browser: playwright is given ``/usr/bin/chromium`` (``apt-get
install chromium``, done by ``.ci/run``) with the flags this machine needs.
``ZETT_SCREENSHOT_DIR`` keeps the screenshots the tests take (default: the test's
temporary folder).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("ZETT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

# as root chromium needs --no-sandbox; the rest keeps it from reaching the network
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--disable-extensions",
    "--no-first-run",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--metrics-recording-only",
]


def has_chromium() -> bool:
    return Path(CHROMIUM).exists()


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium (playwright's sync API); closed at the end."""
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def screenshot_dir(default: Path) -> Path:
    """Where screenshots go: ``ZETT_SCREENSHOT_DIR`` or ``default``."""
    folder = Path(os.environ.get("ZETT_SCREENSHOT_DIR") or default)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
