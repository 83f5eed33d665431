"""Lines typed by the user, read inside the event loop and cancellable.

``input()`` in a worker thread cannot be cancelled: Ctrl-C at a prompt printed
"cancelled", then the process waited for the thread, that is for Enter, and a
second Ctrl-C ended it with a threading traceback. :class:`LineReader` waits
until stdin is readable (``anyio.wait_readable``), then reads what is there
with ``os.read``, so a cancelled wait (Ctrl-C, SIGTERM) ends at once and leaves
nothing behind. The terminal's own line editing (backspace, Ctrl-U, Ctrl-W)
applies; there is no history.

Used by the approval prompt of ``zett run`` (:mod:`zett_agent.cli._approvals`)
and by ``zett chat`` (:mod:`zett_agent.cli._chat`).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import IO

import anyio
import anyio.to_thread

__all__ = ["LineReader"]

_CHUNK = 4096


class LineReader:
    """Reads lines from a file descriptor (default: stdin's), one at a time.

    ``prompt`` is written to ``echo`` (default: stderr, so stdout keeps the
    answer only) before waiting. Lines come without their newline; ``None``
    means end of input (Ctrl-D at the start of a line on a terminal, or the end
    of a pipe or file).
    """

    def __init__(self, fd: int | None = None, echo: IO[str] | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.echo = echo
        self._buffer = b""
        mode = os.fstat(self.fd).st_mode
        self._pollable = not stat.S_ISREG(mode)  # a regular file is always readable

    async def readline(self, prompt: str = "") -> str | None:
        """The next line, or None at the end of input."""
        if prompt:
            out = self.echo or sys.stderr
            out.write(prompt)
            out.flush()
        while b"\n" not in self._buffer:
            data = await self._read()
            if not data:  # end of input; a line typed without Enter still counts
                rest, self._buffer = self._buffer, b""
                return rest.decode("utf-8", "replace") if rest else None
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").removesuffix("\r")

    async def _read(self) -> bytes:
        if self._pollable:
            try:
                await anyio.wait_readable(self.fd)
            except (NotImplementedError, OSError):  # no readiness for this fd here
                return await anyio.to_thread.run_sync(
                    os.read, self.fd, _CHUNK, abandon_on_cancel=True
                )
        try:
            return os.read(self.fd, _CHUNK)
        except BlockingIOError:  # woken but nothing there after all
            return await self._read()
        except OSError:  # the terminal went away (EIO): the end of input
            return b""
