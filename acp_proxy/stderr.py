"""The proxy's own words: one line on stderr, prefixed ``acp-proxy:``. Never stdout.

Rules:
- stdout is the protocol channel in ``record`` and ``replay``; nothing here touches it.
- A message is written with one ``os.write`` so lines from the proxy, its recorder process and
  the agent's forwarded stderr do not interleave mid-line.
- Imports nothing heavy: it is used before the command line loads.
- Recorded text quoted in a message is made visible first (control characters as escapes,
  newlines kept for the few messages that are a paragraph of lines): never raw escapes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

# What the proxy's parts are given to say things with (``report`` below, or a test's list).
Reporter = Callable[[str], None]


def report(message: str) -> None:
    """Say something on stderr as the proxy.

    Messages can quote recorded text (a method name, a replay divergence): control
    characters are shown as escapes (``acp_proxy.display.visible``), never sent raw.
    """
    if not message.isprintable():
        from acp_proxy.display import visible

        message = visible(message, lines=True)
    with contextlib.suppress(OSError):  # nowhere left to say it
        os.write(2, f"acp-proxy: {message}\n".encode(errors="replace"))
