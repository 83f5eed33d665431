"""Refusals that arrive as HTTP errors beyond the seed's four (Google's blocked prompt,
Kimi's 400, OpenRouter's 403s, a Responses policy failure): DeepSeek 400 "Content
Exists Risk", GLM 400 code 1301, Qwen 400 ``data_inspection_failed``, xAI 403 safety
check, OpenAI 400 ``invalid_prompt`` about safety. The seed is silent on them (the
README says so); the decision, per row, is made against what the official SDK does
with the same bytes: the openai SDK (3.57.0, the client every one of these
OpenAI-compatible APIs documents) raises its generic status errors for them,
``BadRequestError`` / ``PermissionDeniedError``, with nothing that tells a refusal from
a malformed request. Each body says it is a content or safety decision, which is the
seed's rule 3 ("a refusal before any output, which arrives as an error"), so zett
answers REFUSAL (no retry, the conversation continues, the host is told); a body of
the same status and code that does not say so still raises (``invalid_prompt``
without a safety word). Real sockets, streamed and not.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from zett_agent import Model, ModelRequest, StopReason, UserMessage
from zett_agent.errors import ProviderHTTPError
from zett_agent.testing import ReplayServer, Reply

RECORDINGS = Path(__file__).parent / "recordings"
ROWS = [
    # vendor, recording, status, the SDK's error type, raw, category
    ("deepseek", "deepseek__400_content_exists_risk.json", 400, openai.BadRequestError,
     "invalid_request_error", "Content Exists Risk"),
    ("glm", "glm__400_code_1301_sensitive.json", 400, openai.BadRequestError, "1301",
     "sensitive"),
    ("qwen", "qwen__400_data_inspection_failed.json", 400, openai.BadRequestError,
     "data_inspection_failed", "data_inspection_failed"),
    ("qwen", "qwen__400_data_inspection_failed_v2.json", 400, openai.BadRequestError,
     "data_inspection_failed", "data_inspection_failed"),
    ("xai", "xai__403_safety_check_bio.json", 403, openai.PermissionDeniedError, None,
     "SAFETY_CHECK_TYPE_BIO"),
    ("openai", "openai_chat__400_invalid_prompt_safety.json", 400, openai.BadRequestError,
     "invalid_prompt", "invalid_prompt"),
    # the seed's own, for comparison
    ("kimi", "kimi__400_content_filter_high_risk.json", 400, openai.BadRequestError,
     "content_filter", "content_filter"),
]  # fmt: skip


def reply(name: str, status: int) -> Reply:
    return Reply.body((RECORDINGS / name).read_bytes(), status=status)


@pytest.mark.parametrize(("vendor", "name", "status", "sdk_error", "raw", "category"), ROWS)
def test_the_official_sdk_raises_its_generic_status_error(
    vendor: str, name: str, status: int, sdk_error: type[Exception], raw: str | None,
    category: str,
) -> None:  # fmt: skip
    with ReplayServer([reply(name, status)]) as server:
        client = openai.OpenAI(api_key="k", base_url=server.url, max_retries=0)
        with pytest.raises(sdk_error) as caught:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        client.close()
    assert type(caught.value) is sdk_error  # no refusal type: the SDK cannot tell


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "body"])
@pytest.mark.parametrize(("vendor", "name", "status", "sdk_error", "raw", "category"), ROWS)
async def test_zett_answers_a_refusal(
    vendor: str, name: str, status: int, sdk_error: type[Exception], raw: str | None,
    category: str, stream: bool,
) -> None:  # fmt: skip
    with ReplayServer([reply(name, status)]) as server:
        model = Model(vendor, "m", base_url=server.url, api_key="k", stream=stream)
        response = await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()
    info = response.stop_info
    assert (info.reason, info.raw, info.category) == (StopReason.REFUSAL, raw, category)
    assert info.detail["http_status"] == status and response.text == ""
    assert len(server.requests) == 1  # not retried


async def test_the_same_code_without_a_safety_word_still_raises() -> None:
    body = {"error": {"message": "Invalid prompt: unknown field", "type": "invalid_request_error",
                      "param": None, "code": "invalid_prompt"}}  # fmt: skip
    with ReplayServer([Reply.json(body, status=400)]) as server:
        model = Model("openai", "m", base_url=server.url, api_key="k")
        with pytest.raises(ProviderHTTPError) as caught:
            await model.complete(ModelRequest("m", [UserMessage("hi")]))
        await model.aclose()
    assert caught.value.status == 400 and caught.value.code == "invalid_prompt"
