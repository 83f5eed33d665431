"""Long streamed answers for the resumable-stream tests (a replay server's route).

``long``: 160 words, one every ``PACE`` s; ``tool``: 50 words and a get_weather call
(Paris, runs at once), then 50 words; ``refuse``: a refusal streamed word by word
(OpenAI's ``refusal`` deltas); ``oslo``: a get_weather call for Oslo, which waits
for approval (:func:`waits`), then a short answer.
"""

from __future__ import annotations

from typing import Any

from serve_support import _call, _chunk, _prompt_text, _sse, _text
from zett_agent.testing import RecordedRequest, Reply

PACE = 0.04


def words(tag: str, n: int) -> str:
    return " ".join(f"{tag}{k}" for k in range(n))


def waits(call: Any) -> bool:
    """get_weather for Oslo waits for a person; other calls run."""
    return call.name == "get_weather" and "Oslo" in call.arguments


def resume_reply(request: RecordedRequest, pace: float = PACE) -> Reply:
    messages = request.json["messages"]
    last = messages[-1]
    asked = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    prompt = _prompt_text(asked)
    if last["role"] == "tool":
        return _sse(_text(words("after", 50)), delay=pace)
    if "long" in prompt:
        return _sse(_text(words("word", 160)), delay=pace)
    if "tool" in prompt:
        chunks = _text(words("before", 50))[:-1]
        chunks += _call("call_t1", "get_weather", ['{"city"', ': "Paris"}'])
        chunks.append(_chunk({}, "tool_calls"))
        return _sse(chunks, delay=pace)
    if "oslo" in prompt:
        chunks = _text(words("asking", 20))[:-1]
        chunks += _call("call_o1", "get_weather", ['{"city": "Oslo"}'])
        chunks.append(_chunk({}, "tool_calls"))
        return _sse(chunks, delay=pace)
    if "refuse" in prompt:
        pieces = [_chunk({"role": "assistant", "content": None, "refusal": ""})]
        pieces += [_chunk({"refusal": f"no{k} "}) for k in range(80)]
        pieces.append(_chunk({}, "stop"))
        return _sse(pieces, delay=pace)
    return _sse(_text(f"You said: {prompt}"))
