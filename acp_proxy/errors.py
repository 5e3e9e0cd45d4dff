"""The exceptions acp-proxy raises on purpose.

Rules:
- One root, ``AcpProxyError``; a child exists only where a caller treats it differently.
- Peer bytes never raise: they become values (see jsonrpc.py). These are for local trouble:
  a database that cannot be written, a reference that names nothing, a misused API.
- ``BadReference`` is a REF (or the database or file it points into) that cannot be used:
  the command line says it in one line and exits 2, like any other usage error.
- Only cli/ turns them into messages and exit codes.
"""

from __future__ import annotations


class AcpProxyError(Exception):
    """Root of every error acp-proxy raises on purpose."""


class RecordingError(AcpProxyError):
    """The recording database cannot be opened, read or written."""


class BadReference(AcpProxyError):
    """A REF names nothing, or names a database or file that is not a usable recording."""


class RecordingBusy(RecordingError):
    """Another writer holds the database's lock: waiting and retrying will get it."""


class UnknownRecording(BadReference):
    """A recording reference (id, session id, label, ``last``) names nothing."""


class UnreadableRecording(BadReference, RecordingError):
    """A database or recording file exists but is not a recording acp-proxy can read."""
