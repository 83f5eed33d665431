"""Session ids on the command line: unique prefixes, the latest session, and no
silent new sessions.

* ``zett sessions list`` shows each id by its shortest unique prefix of at least
  :data:`MIN_PREFIX` characters (as git abbreviates commit ids), and every command
  that takes a stored session's id takes such a prefix (an exact id always wins).
* ``-c/--continue`` is the session written last.
* ``--session ID`` names a session that exists: an unknown id (a typo) is refused
  rather than starting a new session under it; ``--new-session ID`` makes one and
  is refused when the id is taken.

A refusal is a :class:`SessionPickError` whose message says what to do; the
commands print it on one line and exit 1 (a missing ``--db`` is a usage error, 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

__all__ = [
    "MIN_PREFIX",
    "SessionPickError",
    "match_session",
    "pick_session",
    "stored_session_ids",
    "unique_prefixes",
]

MIN_PREFIX = 8
"""The fewest characters of an id ``zett sessions list`` shows (fewer when the id is shorter)."""


class SessionPickError(Exception):
    """A session id that names no stored session, or several (the message says
    which and what to do)."""


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def unique_prefixes(ids: Sequence[str], minimum: int = MIN_PREFIX) -> dict[str, str]:
    """Each id's shortest prefix that no other id of ``ids`` starts with, at least
    ``minimum`` characters (the whole id when it is shorter, or when another id
    starts with all of it)."""
    ordered = sorted(set(ids))
    shown: dict[str, str] = {}
    for i, sid in enumerate(ordered):
        shared = max(
            _common(sid, ordered[i - 1]) if i > 0 else 0,
            _common(sid, ordered[i + 1]) if i + 1 < len(ordered) else 0,
        )
        shown[sid] = sid[: max(minimum, shared + 1)]
    return shown


def match_session(ids: Sequence[str], text: str, db: object) -> str:
    """The id of ``ids`` that ``text`` names: the id itself, else the one id that
    starts with it. Raises :class:`SessionPickError` for none or several."""
    if text in ids:
        return text
    found = [sid for sid in ids if sid.startswith(text)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise SessionPickError(
            f"no session {text!r} in {db} (zett sessions list --db {db} lists them; "
            f"--new-session {text} starts one under that id)"
        )
    shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
    raise SessionPickError(
        f"{text!r} is the start of {len(found)} sessions in {db} ({shown}): give more of the id"
    )


def stored_session_ids(db: Path) -> list[str]:
    """The ids of the sessions stored in the SQLite file ``db``, the one written
    last first; none when the file does not exist (nothing is created)."""
    if not db.is_file():
        return []
    import anyio

    from zett_agent.sessions import SQLiteSessionStore

    async def listed() -> list[Any]:
        async with SQLiteSessionStore(db) as store:
            return await store.list_sessions()

    return [info.session_id for info in anyio.run(listed)]


def pick_session(
    db: Path | None, session: str | None, new_session: str | None, latest: bool
) -> tuple[str | None, bool]:
    """The session a run goes into, and whether it is new: ``(id, new)``.

    ``(None, True)`` when none of ``--session``, ``--new-session`` and
    ``--continue`` was given (a new session with a fresh id). Raises
    ``typer.BadParameter`` (exit 2) for two of them at once or one without
    ``--db``, and :class:`SessionPickError` for an id that is unknown, ambiguous
    or (``--new-session``) taken, and for ``--continue`` on a database with no
    session."""
    given = [
        name
        for name, value in (
            ("--session", session),
            ("--new-session", new_session),
            ("--continue", latest or None),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise typer.BadParameter(f"give one of {' and '.join(given)}", param_hint=given[0])
    if not given:
        return None, True
    if db is None:
        raise typer.BadParameter(f"{given[0]} needs --db FILE (or ZETT_DB)", param_hint=given[0])
    from zett_agent.errors import SessionStoreError
    from zett_agent.sessions._base import check_session_id

    try:
        ids = stored_session_ids(db)
    except SessionStoreError as error:
        raise SessionPickError(str(error)) from None
    if new_session is not None:
        try:
            check_session_id(new_session)
        except SessionStoreError as error:
            raise typer.BadParameter(str(error), param_hint="--new-session") from None
        if new_session in ids:
            raise SessionPickError(
                f"session {new_session!r} exists already in {db}: continue it with "
                f"--session {new_session}"
            )
        return new_session, True
    if latest:
        if not ids:
            raise SessionPickError(f"no session to continue in {db}: it holds none yet")
        return ids[0], False
    assert session is not None
    if not db.is_file():
        raise SessionPickError(f"no session {session!r}: no such file {db}")
    return match_session(ids, session, db), False
