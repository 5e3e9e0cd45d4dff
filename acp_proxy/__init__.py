"""acp-proxy: a transparent recording proxy for the Agent Client Protocol (ACP)."""

from __future__ import annotations

__version__ = "0.1.0"
