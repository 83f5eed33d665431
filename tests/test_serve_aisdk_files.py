"""A file from the Vercel AI SDK's own client (``tests/node/send_file.mjs``, ``ai``
pinned): a FileUIPart with a data URL through DefaultChatTransport, a second turn
that re-sends the whole history as the stock transport does, the restored session
validated by the SDK's ``safeValidateUIMessages`` and sent back. Needs node and
``npm ci`` in tests/node (``.ci/run`` does both)."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the serve extra (starlette, uvicorn) is not installed")

from serve_support import make_agent, running_server, scenario_reply
from zett_agent import ImagePart
from zett_agent.serve import create_app
from zett_agent.testing import ReplayServer

NODE_DIR = Path(__file__).parent / "node"
NODE = shutil.which("node")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 100  # 25 KB: kept as a blob

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not (NODE_DIR / "node_modules" / "ai" / "package.json").exists(),
        reason="the AI SDK is not installed: run `npm ci` in tests/node",
    ),
]


def test_a_file_from_the_sdks_transport_is_stored_restored_and_not_taken_twice() -> None:
    png64 = base64.b64encode(PNG).decode()
    with ReplayServer(route=scenario_reply) as replay:
        with running_server(create_app(make_agent(replay.url), owns=True)) as url:
            done = subprocess.run(
                [str(NODE), "send_file.mjs", url, "sdkfile", png64],
                cwd=NODE_DIR,
                capture_output=True,
                text=True,
                timeout=90,
                check=False,
            )
        requests = [r.json for r in replay.requests]
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["errors"] == []

    def said(message: dict[str, object]) -> str:
        parts = message["parts"]
        assert isinstance(parts, list)
        return "".join(p["text"] for p in parts if p["type"] == "text")

    assert said(result["first"]) == "You said: What is in this picture? (1 image)"
    assert said(result["second"]).startswith("You said: And its colour?")
    assert said(result["third"]).startswith("You said: Thanks")
    # every model request carries the image once: the first turn's, from the store,
    # never again from the data URL the transport re-sent (the stored parts win)
    assert [str(body).count(png64) for body in requests] == [1, 1, 1]

    assert result["restoredValid"] is True
    digest = ImagePart(media_type="image/png", data=PNG).sha256
    assert result["restored"][0]["parts"][1] == {
        "type": "file",
        "mediaType": "image/png",
        "url": f"/api/sessions/sdkfile/parts/{digest}",
        "filename": "dot.png",
    }
