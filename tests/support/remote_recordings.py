"""Remote recordings written straight into a database, for the readers' tests.

``write_remote(db, transport, exchange_rows, frames)`` writes one connection carried over
``http`` or ``websocket`` (docs/recording-format.md, format 8): its frames (whole messages,
no newline, as ``record --listen`` stores them), the HTTP exchanges (``exchange_rows``:
columns of ``http_exchange``, ``seq`` included) and each frame's exchange and stream.

``http_exchanges()`` and ``http_frames()`` are one conversation carried as the Streamable HTTP
RFD says (initialize, session/new, one prompt turn), for the transport rules, the readers and
the OTLP export of remote recordings; their keywords make one departure from it at a time.
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
from tests.support.helpers import A2C, C2A, line

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


S = "sess_1"
INIT = line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}})
INIT_OK = line({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})
NEW = line({"jsonrpc": "2.0", "id": 1, "method": "session/new",
            "params": {"cwd": "/w", "mcpServers": []}})  # fmt: skip
NEW_OK = line({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": S}})
PROMPT = line({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
               "params": {"sessionId": S, "prompt": [{"type": "text", "text": "hi"}]}})  # fmt: skip
UPDATE = line({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S,
               "update": {"sessionUpdate": "agent_message_chunk",
                          "content": {"type": "text", "text": "hello"}}}})  # fmt: skip
DONE = line({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})
CONNECTION = [["acp-connection-id", "c1"], ["content-type", "application/json"]]


def exchange(seq: int, method: str, stream: str, status: int, **extra: Any) -> dict[str, Any]:
    return {"seq": seq, "method": method, "target": "/acp", "http_version": "1.1",
            "stream": stream, "status": status, "started_ns": 10**18, **extra}  # fmt: skip


def http_exchanges(*, init_headers: Any = CONNECTION, prompt_session: str | None = S) -> list[Any]:
    return [
        exchange(1, "POST", "post", 200, response_headers=init_headers),
        exchange(2, "GET", "connection_sse", 200, acp_connection_id="c1"),
        exchange(3, "POST", "post", 202, acp_connection_id="c1"),
        exchange(4, "GET", "session_sse", 200, acp_connection_id="c1", acp_session_id=S),
        exchange(5, "POST", "post", 202, acp_connection_id="c1", acp_session_id=prompt_session),
    ]


def http_frames(*, update_on: tuple[int, str] = (4, "session_sse")) -> list[RemoteFrame]:
    return [
        (C2A, INIT.rstrip(), 1, "post"), (A2C, INIT_OK.rstrip(), 1, "post_answer"),
        (C2A, NEW.rstrip(), 3, "post"), (A2C, NEW_OK.rstrip(), 2, "connection_sse"),
        (C2A, PROMPT.rstrip(), 5, "post"), (A2C, UPDATE.rstrip(), *update_on),
        (A2C, DONE.rstrip(), 4, "session_sse"),
    ]  # fmt: skip
