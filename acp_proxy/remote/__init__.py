"""The ACP remote transport (Streamable HTTP and WebSocket): async by nature, beside record/.

Rules:
- Nothing here is imported by ``record/``: the stdio hot path stays on plain threads.
- Every part feeds record's one recording pipeline (record/recording.py).
"""

from __future__ import annotations

import importlib.util

EXTRA_MODULES = ("httpx", "h2", "websockets", "hypercorn")
MISSING_EXTRA = "remote ACP needs the remote extra: pip install 'acp-proxy[remote]'"


def missing_extra() -> str | None:
    """One line saying what to install, or None when the libraries are there."""
    for name in EXTRA_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return MISSING_EXTRA
    return None
