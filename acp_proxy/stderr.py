"""The proxy's own words: one line on stderr, prefixed ``acp-proxy:``. Never stdout.

Rules:
- stdout is the protocol channel in ``record`` and ``replay``; nothing here touches it.
- A message is written with one ``os.write`` so lines from the proxy, its recorder process and
  the agent's forwarded stderr do not interleave mid-line.
- Imports nothing heavy: it is used before the command line loads.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

# What the proxy's parts are given to say things with (``report`` below, or a test's list).
Reporter = Callable[[str], None]


def report(message: str) -> None:
    """Say something on stderr as the proxy."""
    with contextlib.suppress(OSError):  # nowhere left to say it
        os.write(2, f"acp-proxy: {message}\n".encode(errors="replace"))
