"""Remote recordings written straight into a database, for the readers' tests.

``write_remote(db, transport, exchange_rows, frames)`` writes one connection carried over
``http`` or ``websocket`` (docs/recording-format.md, format 8): its frames (whole messages,
no newline, as ``record --listen`` stores them), the HTTP exchanges (``exchange_rows``:
columns of ``http_exchange``, ``seq`` included) and each frame's exchange and stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp_proxy.protocol.acp import Direction
from acp_proxy.protocol.observer import ConnectionObserver
from acp_proxy.protocol.wire import Frame
from acp_proxy.store.database import connect
from acp_proxy.store.remote import RemoteFactsWriter
from acp_proxy.store.writer import NewConnection, RecordingWriter

# (direction, message bytes, exchange seq, stream)
RemoteFrame = tuple[Direction, bytes, int, str]


def write_remote(
    db_path: Path, transport: str, exchange_rows: Sequence[dict[str, Any]],
    frames: Sequence[RemoteFrame], label: str | None = None,
) -> int:  # fmt: skip
    observer = ConnectionObserver()
    offsets = dict.fromkeys(Direction, 0)
    records = []
    for number, (direction, raw, _, _) in enumerate(frames, start=1):
        clock = number * 1_000_000
        frame = Frame(raw, offsets[direction])
        offsets[direction] += len(raw)
        records.append(observer.observe(direction, frame, clock, clock + 10**18))
    db = connect(db_path)
    try:
        new = NewConnection(
            [], "/", "test", 1, label=label, started_ns=10**18, transport=transport,
            remote_url="http://127.0.0.1:1/acp", listen_url="http://127.0.0.1:2/acp",
            client_address="127.0.0.1:3",
        )  # fmt: skip
        writer = RecordingWriter.start(db, new)
        writer.append(records, facts=observer.facts())
        connection_id = writer.connection_id
        transports = [
            (connection_id, record.seq, exchange, stream)
            for record, (_, _, exchange, stream) in zip(records, frames, strict=True)
        ]
        RemoteFactsWriter(db).write([(connection_id, row) for row in exchange_rows], [], transports)
    finally:
        db.close()
    return connection_id
