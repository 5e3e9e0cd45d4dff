"""The exceptions acp-proxy raises on purpose.

Rules:
- One root, ``AcpProxyError``; a child exists only where a caller treats it differently.
- Peer bytes never raise: they become values (see jsonrpc.py). These are for local trouble:
  a database that cannot be written, a reference that names nothing, a misused API.
- Only cli.py turns them into messages and exit codes.
"""

from __future__ import annotations


class AcpProxyError(Exception):
    """Root of every error acp-proxy raises on purpose."""


class RecordingError(AcpProxyError):
    """The recording database cannot be opened, read or written."""


class UnknownRecording(AcpProxyError):
    """A recording reference (id, session id, label, ``last``) names nothing."""
