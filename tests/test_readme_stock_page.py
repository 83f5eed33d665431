"""The ``useChat`` page the README shows is the one the browser tests drive: its two
```jsx blocks are ``tests/stock_page/src/Chat.jsx`` and ``main.jsx`` as they are, and
the page uses only what a user of the AI SDK writes (the default transport, the SDK's
approval helpers), no adapter."""

from __future__ import annotations

import json
from pathlib import Path

import docs_text

ROOT = Path(__file__).parent.parent
PAGE = ROOT / "tests" / "stock_page"


def test_the_readme_shows_the_tested_page_as_it_is() -> None:
    blocks = docs_text.blocks("jsx")
    assert blocks == [
        (PAGE / "src" / "Chat.jsx").read_text(),
        (PAGE / "src" / "main.jsx").read_text(),
    ]


def test_the_page_uses_the_default_transport_and_the_sdks_approval_flow() -> None:
    source = (PAGE / "src" / "Chat.jsx").read_text() + (PAGE / "src" / "main.jsx").read_text()
    assert "transport:" not in source and "ChatTransport" not in source  # the default one
    assert "sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses" in source
    assert "addToolApprovalResponse" in source


def test_the_page_pins_the_sdk_lines_the_readme_names() -> None:
    pins = json.loads((PAGE / "package.json").read_text())["dependencies"]
    assert pins["@ai-sdk/react"].startswith("4.0.") and pins["ai"].startswith("7.0.")
    lock = json.loads((PAGE / "package-lock.json").read_text())["packages"]
    assert lock["node_modules/ai"]["version"] == pins["ai"] == "7.0.173"
    assert lock["node_modules/@ai-sdk/react"]["dependencies"]["ai"] == pins["ai"]
