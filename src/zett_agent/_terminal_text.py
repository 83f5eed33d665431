"""Text zett did not write, made safe to show on a terminal: :func:`terminal_safe`.

A terminal takes control characters in the text it is sent as commands: ESC
starts a CSI sequence (``ESC [ 2 J`` clears the screen, ``ESC [ 1 A ESC [ 2 K``
erases the line above, which forges a line zett printed) or an OSC one
(``ESC ] 52 ;`` writes the clipboard); C1 characters (U+0080-U+009F) are the
same commands in one character on some terminals. MCP servers (tool names,
results, log lines, progress, elicitation messages), models (answers, reasoning,
tool arguments), providers (messages in notices and errors) and file names are
all text zett did not write, so everything the CLI prints passes this one
function (``cli/_main.py``'s consoles apply it to every segment they render).
rich does not do it: it strips only BEL, BS, VT, FF and CR.

Each control character is shown escaped as ``cat -v`` shows it:

==========================  =============================================
U+0000-U+001F (C0)          ``^@`` ... ``^_`` (ESC is ``^[``), except the
                            kept ones (newline and tab by default); CR LF
                            is a line end (newline)
U+007F (DEL)                ``^?``
U+0080-U+009F (C1)          ``M-^@`` ... ``M-^_`` (CSI U+009B is ``M-^[``)
bidirectional overrides     ``<U+202E>`` (U+202A-U+202E, U+2066-U+2069):
and isolates                they reorder what a line seems to say
==========================  =============================================

Everything else, every printable character of any script, is left as it is.
JSON output (``--json``) is never passed through it: it stays exact.
"""

from __future__ import annotations

import re

__all__ = ["one_line", "terminal_safe"]


def _table(keep: str) -> dict[int, str]:
    table = {code: f"^{chr(code + 64)}" for code in range(0x20)}
    table[0x7F] = "^?"
    table.update({code: f"M-^{chr(code - 0x80 + 64)}" for code in range(0x80, 0xA0)})
    for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)):
        table[code] = f"<U+{code:04X}>"
    for char in keep:
        table.pop(ord(char), None)
    return table


_LAYOUT = _table("\n\t")
_LINE = _table("")
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character shown escaped (the module docstring's
    table); newlines and tabs are kept, a CR LF pair becomes a newline. Returns
    ``text`` itself when it holds none. Idempotent: its output is safe already."""
    if _UNSAFE.search(text) is None:
        return text
    return text.replace("\r\n", "\n").translate(_LAYOUT)


def one_line(text: str) -> str:
    """Like :func:`terminal_safe`, for text that must stay on one line (a tool's or
    a server's name): newlines and tabs are shown escaped too (``^J``, ``^I``)."""
    if _UNSAFE.search(text) is None:
        return text
    return text.translate(_LINE)
