"""``record --listen --otlp``: an HTTP server span per request, sent live, the same as export's.

The Python SDK's example clients (Streamable HTTP and WebSocket) talk to its example server
through the reverse proxy, which sends its spans live to an OTLP receiver (opentelemetry-proto,
on loopback). Then ``export --format otlp`` sends the same recordings to a second receiver:
every HTTP server span, and the connection's span, must be the same in both (ids, parent,
name, times, attributes, status): the live sink and the export build them with one function.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import otlp_receiver
from tests.support.cli import run
from tests.support.remote_peers import Listener, python_client, python_server, run_client

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]
SERVER_KIND = 2  # OTLP's SPAN_KIND_SERVER


def shape(span: otlp_receiver.ReceivedSpan) -> tuple[Any, ...]:
    return (span.trace_id, span.span_id, span.parent_id, span.name, span.kind, span.start_ns,
            span.end_ns, span.attributes, span.status_code, span.status_message)  # fmt: skip


def by_id(spans: list[otlp_receiver.ReceivedSpan]) -> dict[str, tuple[Any, ...]]:
    return {span.span_id: shape(span) for span in spans
            if span.kind == SERVER_KIND or span.name == "acp connection"}  # fmt: skip


def exchange_count(db: Path) -> int:
    with contextlib.closing(sqlite3.connect(db)) as con:
        return int(con.execute("SELECT count(*) FROM http_exchange").fetchone()[0])


def test_live_http_spans_are_the_exported_ones(tmp_path: Path, python_examples: Path) -> None:
    db = tmp_path / "gateway.db"
    live = otlp_receiver.start()
    try:
        with python_server(python_examples) as upstream:
            gateway = Listener(db, upstream, "--otlp", live.url)
            try:
                for name in ("http_client.py", "ws_client.py"):
                    url = gateway.url if name.startswith("http") else gateway.ws_url
                    argv, extra = python_client(python_examples, name, url)
                    assert "stop reason: end_turn" in run_client(argv, extra)
            finally:
                assert gateway.stop() == 0, gateway.stderr_lines
        sent_live = list(live.spans)
    finally:
        otlp_receiver.stop(live)
    exported: list[otlp_receiver.ReceivedSpan] = []
    for connection in ("1", "2"):
        receiver = otlp_receiver.start()
        try:
            said = run(db, "export", "--format", "otlp", "--endpoint", receiver.url, connection)
            exported += receiver.wait_for(int(said.output.split()[1]))
        finally:
            otlp_receiver.stop(receiver)
    live_http = [s for s in sent_live if s.kind == SERVER_KIND]
    assert len(live_http) == exchange_count(db) >= 4  # initialize POST, streams, DELETE, WS
    assert {s.attributes["acp.transport.stream"] for s in live_http} >= {"post", "websocket"}
    assert by_id(sent_live) == by_id(exported)
