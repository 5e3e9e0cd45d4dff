"""What the command line says when SQLite fails while a recording is being read.

Rules:
- A recording database can turn out damaged only once it is read (a malformed page, text that
  is not UTF-8, a table missing): SQLite then raises from deep inside a reader. ``unreadable``
  turns such an error into ``UnreadableRecording`` (one line, exit 2) for the command line,
  which must not import sqlite3 itself (only store/ does).
- sqlite3 is imported only once something failed, so commands pay nothing for this.
"""

from __future__ import annotations

from acp_proxy.errors import UnreadableRecording


def unreadable(error: BaseException) -> UnreadableRecording | None:
    """The one-line form of a SQLite error met while reading, or None for any other error."""
    import sqlite3

    if not isinstance(error, sqlite3.Error):
        return None
    return UnreadableRecording(f"cannot read the recording database: {error}")
