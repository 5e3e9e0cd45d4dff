"""ANSI styling of terminal text: the same escape sequences ``click.style`` writes.

Rules: pure; it styles only text the caller has already made safe for a terminal; whether the
styling reaches the terminal is decided where the text is written (cli/), not here.
"""

from __future__ import annotations

_COLOURS = {"black": 30, "red": 31, "green": 32, "yellow": 33}
_COLOURS |= {"blue": 34, "magenta": 35, "cyan": 36, "white": 37}
_RESET = "\x1b[0m"


def style(text: str, fg: str | None = None, *, bold: bool = False, dim: bool = False) -> str:
    """``text`` wrapped in the SGR codes for a foreground colour, bold and dim, then a reset."""
    codes = []
    if fg is not None:
        codes.append(_COLOURS[fg])
    if bold:
        codes.append(1)
    if dim:
        codes.append(2)
    return "".join(f"\x1b[{code}m" for code in codes) + text + _RESET
