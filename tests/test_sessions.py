"""Session stores: semantics, schema versions, old rows, corrupt rows, no keys on
disk, and concurrency (sessions in one process, two processes on one file)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from stores import STORE_KINDS, open_store
from zett_agent import (
    AgentClient,
    AssistantMessage,
    Message,
    Model,
    SessionStore,
    SessionStoreError,
    SQLiteSessionStore,
    StopInfo,
    StopReason,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    create_agent,
)
from zett_agent._exchange import ModelRequest, ModelResponse, StreamEvent, TextDelta
from zett_agent._messages import message_to_dict
from zett_agent.sessions import DB_LAYOUT_VERSION, SCHEMA_VERSION
from zett_agent.testing import ReplayServer, Reply

pytestmark = pytest.mark.timeout(60)

SRC = Path(__file__).resolve().parents[1] / "src"

MESSAGES: list[Message] = [
    SystemMessage("be brief"),
    UserMessage("weather in Paris?"),
    AssistantMessage(
        "Looking.",
        (ToolCall("c1", "weather", '{"city": "Paris"}'),),
        usage=Usage(10, 5),
        model="m",
        provider="scripted",
        provider_record={"protocol": "x", "blocks": [{"type": "text", "text": "Looking."}]},
    ),
    ToolResultMessage("c1", "weather", "sunny"),
    AssistantMessage(
        "It is sunn",
        stop=StopInfo(
            StopReason.INTERRUPTED, "overloaded_error", detail={"withheld_tool_calls": ["x"]}
        ),
        reasoning="think",
    ),
]


@pytest.fixture(params=STORE_KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    async with open_store(request.param, tmp_path) as made:
        yield made


def raw_db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


# ---------------------------------------------------------------- semantics


async def test_append_and_load_round_trip(store: SessionStore) -> None:
    for message in MESSAGES:
        await store.append("s1", message)
    await store.append("s2", UserMessage("other"))
    assert await store.load("s1") == MESSAGES
    assert await store.load("s2") == [UserMessage("other")]
    assert await store.load("unknown") == []
    rows = await store.rows("s1")
    assert [row.seq for row in rows] == [1, 2, 3, 4, 5]
    assert all(row.schema_version == SCHEMA_VERSION and row.replaces is None for row in rows)
    loaded = rows[-1].message
    assert isinstance(loaded, AssistantMessage)
    assert loaded.stop is not None
    assert loaded.stop.reason is StopReason.INTERRUPTED
    assert loaded.stop.raw == "overloaded_error"


async def test_list_and_delete(store: SessionStore) -> None:
    await store.append("old", UserMessage("a"))
    await anyio.sleep(0.01)
    await store.append("new", UserMessage("b"))
    await store.append("new", AssistantMessage("c"))
    infos = await store.list_sessions()
    assert [(i.session_id, i.rows) for i in infos] == [("new", 2), ("old", 1)]
    assert infos[0].updated_at >= infos[0].created_at
    assert await store.delete("old") is True
    assert await store.delete("old") is False
    assert [i.session_id for i in await store.list_sessions()] == ["new"]
    assert await store.load("old") == []


async def test_replacing_row_takes_the_place_of_the_last_and_keeps_it(store: SessionStore) -> None:
    await store.append("s", UserMessage("q"))
    cut = await store.append("s", AssistantMessage("Hel", stop=StopInfo(StopReason.INTERRUPTED)))
    joined = AssistantMessage("Hello world")
    seq = await store.append("s", joined, replaces=cut)
    await store.append("s", UserMessage("next"))
    assert await store.load("s") == [UserMessage("q"), joined, UserMessage("next")]
    rows = await store.rows("s")
    assert [(r.seq, r.replaces) for r in rows] == [(1, None), (2, None), (3, 2), (4, None)]
    assert rows[1].message.text == "Hel"  # type: ignore[union-attr]  # the cut-off row stays
    assert seq == 3
    # only the last row may be replaced: the session changed meanwhile
    with pytest.raises(SessionStoreError, match=r"cannot replace row 3, the last row is 4"):
        await store.append("s", AssistantMessage("x"), replaces=3)
    assert len(await store.rows("s")) == 4


async def test_a_message_that_is_not_json_is_refused_before_writing(store: SessionStore) -> None:
    bad = AssistantMessage("x", provider_record={"value": object()})
    with pytest.raises(SessionStoreError, match="cannot be stored as JSON"):
        await store.append("s", bad)
    assert await store.rows("s") == []


# ---------------------------------------------------------------- SQLite specifics


async def test_sqlite_file_settings_and_durability(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    async with SQLiteSessionStore(path) as store:
        await store.append("s", UserMessage("hi"))
        assert await store.integrity_check() == "ok"
        # the row is committed: another connection sees it while the store is open
        with raw_db(path) as other:
            assert other.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
            assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert other.execute("PRAGMA user_version").fetchone()[0] == DB_LAYOUT_VERSION
    async with SQLiteSessionStore(path, synchronous="normal") as again:
        assert await again.load("s") == [UserMessage("hi")]
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteSessionStore(path, synchronous="FAST; DROP TABLE messages")
    closed = SQLiteSessionStore(path)
    await closed.aclose()
    with pytest.raises(SessionStoreError, match="closed"):
        await closed.load("s")


OLD_ASSISTANT = {  # an assistant message as stored before ``stop`` existed
    "role": "assistant",
    "text": "Paris is sunny.",
    "tool_calls": [],
    "usage": {"input_tokens": 3, "output_tokens": 4},
    "reasoning": "",
    "model": "old-model",
    "provider": "anthropic",
    "provider_record": None,
}


def make_v0_database(path: Path) -> None:
    """A file in the old shape: layout 0 (no ``replaces`` column), rows of schema 0."""
    with raw_db(path) as db:
        db.execute(
            "CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL,"
            " schema_version INTEGER NOT NULL, created_at REAL NOT NULL, data TEXT NOT NULL,"
            " PRIMARY KEY (session_id, seq))"
        )
        rows = [
            ("old", 1, 0, 1.0, json.dumps({"role": "user", "content": "weather?"})),
            ("old", 2, 0, 2.0, json.dumps(OLD_ASSISTANT)),
            # a key named stop in a version 0 row predates StopInfo and is not read
            ("old", 3, 0, 3.0, json.dumps({**OLD_ASSISTANT, "stop": "length"})),
        ]
        db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?)", rows)


async def test_rows_written_before_stop_existed_load_with_stop_none(tmp_path: Path) -> None:
    path = tmp_path / "v0.sqlite3"
    make_v0_database(path)
    async with SQLiteSessionStore(path) as store:
        rows = await store.rows("old")
        assert [r.schema_version for r in rows] == [0, 0, 0]
        answers = [r.message for r in rows[1:]]
        assert all(isinstance(m, AssistantMessage) and m.stop is None for m in answers)
        assert answers[0].text == "Paris is sunny."  # type: ignore[union-attr]
        # the file was upgraded in place and takes new rows (and replacements)
        cut = await store.append("old", AssistantMessage("x", stop=StopInfo(StopReason.MAX_OUTPUT)))
        await store.append("old", AssistantMessage("xy"), replaces=cut)
        assert [m.text for m in (await store.load("old"))[1:]] == [  # type: ignore[union-attr]
            "Paris is sunny.",
            "Paris is sunny.",
            "xy",
        ]
    with raw_db(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == DB_LAYOUT_VERSION


async def test_newer_row_schema_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    async with SQLiteSessionStore(path) as store:
        await store.append("s1", UserMessage("a"))
        await store.append("s1", UserMessage("b"))
        with raw_db(path) as db:
            db.execute("UPDATE messages SET schema_version = 99 WHERE seq = 2")
        with pytest.raises(
            SessionStoreError, match=r"session 's1', row 2: schema version 99 is newer"
        ):
            await store.load("s1")


async def test_newer_database_layout_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with raw_db(path) as db:
        db.execute("PRAGMA user_version = 42")
    with pytest.raises(SessionStoreError, match=r"layout version 42, newer than"):
        await SQLiteSessionStore(path).load("s")


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ("{not json", "is not JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"role": "robot", "content": "x"}', "not a message.*robot"),
        ('{"role": "assistant", "text": 5, "stop": {"reason": "nope"}}', "not a message"),
    ],
)
async def test_corrupt_row_names_session_and_row_and_drops_nothing(
    tmp_path: Path, data: str, why: str
) -> None:
    path = tmp_path / "s.sqlite3"
    async with SQLiteSessionStore(path) as store:
        for text in ("a", "b", "c"):
            await store.append("s1", UserMessage(text))
        await store.append("s2", UserMessage("fine"))
        with raw_db(path) as db:
            db.execute("UPDATE messages SET data = ? WHERE session_id = 's1' AND seq = 2", (data,))
        with pytest.raises(SessionStoreError, match=rf"session 's1', row 2: .*{why}") as info:
            await store.load("s1")
        assert (info.value.session_id, info.value.row) == ("s1", 2)
        assert await store.load("s2") == [UserMessage("fine")]  # other sessions still load


async def test_a_replacing_row_out_of_place_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    async with SQLiteSessionStore(path) as store:
        for text in ("a", "b", "c"):
            await store.append("s", UserMessage(text))
        with raw_db(path) as db:
            db.execute("UPDATE messages SET replaces = 1 WHERE seq = 3")
        with pytest.raises(SessionStoreError, match=r"row 3: it replaces row 1"):
            await store.load("s")


# ---------------------------------------------------------------- no secrets on disk


async def test_stored_database_holds_no_api_key(tmp_path: Path) -> None:
    secret = "sk-ant-TEST-7f3a9c-do-not-store"
    text = {"type": "text_delta", "text": "Hi"}
    answer = Reply.sse(
        (kind, {"type": kind, **fields})
        for kind, fields in [
            ("message_start", {"message": {"model": "claude-x"}}),
            ("content_block_start", {"index": 0, "content_block": {"type": "text"}}),
            ("content_block_delta", {"index": 0, "delta": text}),
            ("message_delta", {"delta": {"stop_reason": "end_turn"}}),
            ("message_stop", {}),
        ]
    )
    path = tmp_path / "sessions.sqlite3"
    with ReplayServer([answer]) as server:
        model = Model(
            "anthropic",
            "claude-x",
            base_url=server.url,
            api_key=secret,
            headers={"x-extra": secret},
        )
        async with AgentClient(await create_agent(model), path) as client:
            message = await client.run("hello", session_id="s")
        await model.aclose()
        assert message.text == "Hi"
        assert server.requests[0].headers["x-api-key"] == secret  # it was really used
    files = list(tmp_path.iterdir())
    assert files
    for file in files:
        assert secret.encode() not in file.read_bytes(), file.name
    with raw_db(path) as db:
        dumped = "\n".join(db.iterdump())
    assert secret not in dumped
    assert "Hi" in dumped


# ---------------------------------------------------------------- concurrency


class EchoModel:
    """Answers each request with its last user message, slowly, so runs overlap."""

    provider = "echo"
    name = "echo"

    def __init__(self) -> None:
        self.in_flight = 0
        self.most_in_flight = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent | ModelResponse]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            last = request.messages[-1]
            text = f"echo {last.content}" if isinstance(last, UserMessage) else "?"
            for word in text.split():
                await anyio.sleep(0.005)
                yield TextDelta(word + " ")
            yield ModelResponse(text, (), StopInfo(StopReason.END_TURN, "stop"))
        finally:
            self.in_flight -= 1

    def without_tool_calls(self, record: object) -> None:
        return None

    async def aclose(self) -> None:
        pass


@pytest.mark.looptime  # the echo model's pauses are virtual
async def test_concurrent_sessions_in_one_process(tmp_path: Path) -> None:
    model = EchoModel()
    agent = await create_agent(model)
    async with AgentClient(agent, tmp_path / "s.sqlite3") as client:

        async def talk(sid: str) -> None:
            for turn in range(3):
                await client.run(f"{sid} turn {turn}", session_id=sid)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for n in range(8):
                    group.start_soon(talk, f"s{n}")
        assert model.most_in_flight > 1
        for n in range(8):
            history = await client.messages(f"s{n}")
            assert [m.text if isinstance(m, AssistantMessage) else m.content for m in history] == [  # type: ignore[union-attr]
                part for t in range(3) for part in (f"s{n} turn {t}", f"echo s{n} turn {t}")
            ]
        assert len(await client.sessions()) == 8


CHILD = """
import sys
import anyio
sys.path.insert(0, {src!r})
from zett_agent import AgentClient, SQLiteSessionStore, UserMessage, create_agent
from zett_agent.testing import ScriptedModel, reply

async def main(path: str, name: str) -> None:
    store = SQLiteSessionStore(path, timeout=60)
    agent = await create_agent(ScriptedModel(*(reply(f"{{name}} answer {{i}}") for i in range(10))))
    client = AgentClient(agent, store, session_id=name)
    for i in range(10):
        await client.run(f"{{name}} prompt {{i}}")
        await store.append("shared", UserMessage(f"{{name}} {{i}}"))
    await store.aclose()

anyio.run(main, sys.argv[1], sys.argv[2])
"""


def test_two_processes_on_one_file(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD.format(src=str(SRC))))
    path = tmp_path / "shared.sqlite3"
    children = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in ("alpha", "beta")
    ]
    for child in children:
        _, err = child.communicate(timeout=60)
        assert child.returncode == 0, err.decode()

    async def check() -> None:
        async with SQLiteSessionStore(path) as store:
            assert await store.integrity_check() == "ok"
            for name in ("alpha", "beta"):
                history = await store.load(name)
                assert len(history) == 20
                assert history[-1] == AssistantMessage(  # the whole answer, as the agent made it
                    f"{name} answer 9",
                    provider="scripted",
                    provider_record={
                        "protocol": "scripted",
                        "text": f"{name} answer 9",
                        "tool_calls": [],
                    },
                )
            shared = await store.rows("shared")
            assert [r.seq for r in shared] == list(range(1, 21))
            texts = [r.message.content for r in shared]  # type: ignore[union-attr]
            for name in ("alpha", "beta"):
                assert [t for t in texts if t.startswith(name)] == [
                    f"{name} {i}" for i in range(10)
                ]

    anyio.run(check)


def test_stored_row_is_message_to_dict_json(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"

    async def write() -> None:
        async with SQLiteSessionStore(path) as store:
            await store.append("s", MESSAGES[4])

    anyio.run(write)
    with raw_db(path) as db:
        (data,) = db.execute("SELECT data FROM messages").fetchone()
    assert json.loads(data) == message_to_dict(MESSAGES[4])
