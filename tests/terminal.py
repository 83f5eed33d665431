"""The ``zett`` command on a real terminal: a pseudo-terminal (pexpect) as the
child's controlling terminal, so Ctrl-C is the terminal's interrupt character
(SIGINT to the foreground process group) and Ctrl-D its end-of-file, as a user
types them."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import pexpect

from helpers import default_sigint

__all__ = ["Terminal", "spawn_zett"]

Terminal = pexpect.spawn


def spawn_zett(*args: str, env: Mapping[str, str] | None = None, timeout: float = 30) -> Terminal:
    """``python -m zett_agent.cli ARGS`` on a new 40x200 pseudo-terminal."""
    child = pexpect.spawn(
        sys.executable,
        ["-m", "zett_agent.cli", *args],
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})},
        encoding="utf-8",
        codec_errors="replace",
        timeout=timeout,
        dimensions=(40, 200),
        preexec_fn=default_sigint,  # Ctrl-C works even when this suite ignores SIGINT
    )
    return child


def finish(child: Terminal, timeout: float = 15) -> int:
    """Wait for the child to end (its output read to the end); its exit status
    (128 + N for a signal N)."""
    child.expect(pexpect.EOF, timeout=timeout)
    child.close()
    if child.signalstatus is not None:
        return 128 + int(child.signalstatus)
    return int(child.exitstatus)
