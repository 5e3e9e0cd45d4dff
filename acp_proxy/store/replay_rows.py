"""Sans-I/O rows a replay script is built from, as store/replay_reads.py reads them.

Rules:
- ``RecordedFrame`` holds exactly the columns of a stored frame that replay needs (their
  meaning is docs/recording-format.md's); ``Verbatim`` is the short row of a frame replay sends
  as recorded. Plain tuples: replay makes one per frame, and builds nothing else from them.
- Imports nothing of the project: replay's engine needs them before its first answer.
"""

from __future__ import annotations

from typing import Any, NamedTuple


class RecordedFrame(NamedTuple):
    """The columns of a stored frame that replay needs (see docs/recording-format.md)."""

    seq: int
    direction: str
    mono_ns: int
    raw: bytes
    kind: str
    rpc_id: Any
    method: str | None
    update_kind: str | None
    request_seq: int | None
    session_id: str | None


# A frame replay sends verbatim, as replay_reads.load_script reads it: (seq, mono_ns, raw, 1),
# for an agent session/update notification that is neither a notice nor a compaction (nothing
# in it takes part in matching or history).
Verbatim = tuple[int, int, bytes, int]
ScriptRow = RecordedFrame | Verbatim
