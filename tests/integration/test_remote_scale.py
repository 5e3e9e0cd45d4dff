"""Several gateways, one collector: two ``record --listen`` behind the same agent, each
recording locally and sending ``--otlp`` to one OTLP receiver (docs/remote.md, "Scale")."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from acp_proxy.otel.spans import CONNECTION_SPAN
from tests.support import otlp_receiver
from tests.support.remote_peers import Listener, python_client, python_server, run_client

pytestmark = [pytest.mark.peers, pytest.mark.timeout(120)]


def _uids(db: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return [uid for (uid,) in conn.execute("SELECT uid FROM connection ORDER BY id")]


def test_two_gateways_send_their_spans_to_one_collector(
    tmp_path: Path, python_examples: Path
) -> None:
    receiver = otlp_receiver.start()
    try:
        with python_server(python_examples) as upstream:
            gateways = [
                Listener(tmp_path / f"gateway{n}.db", upstream, "--otlp", receiver.url)
                for n in (1, 2)
            ]
            try:
                for gateway, name in zip(gateways, ("http_client.py", "ws_client.py"), strict=True):
                    url = gateway.url if name.startswith("http") else gateway.ws_url
                    argv, extra = python_client(python_examples, name, url)
                    assert "stop reason: end_turn" in run_client(argv, extra)
            finally:
                for gateway in gateways:
                    gateway.stop()
        spans = list(receiver.spans)
    finally:
        otlp_receiver.stop(receiver)
    assert [g.process.returncode for g in gateways] == [0, 0]
    [first] = _uids(tmp_path / "gateway1.db")
    [second] = _uids(tmp_path / "gateway2.db")
    roots = {span.trace_id: span for span in spans if span.name == CONNECTION_SPAN}
    assert set(roots) == {first, second}  # each gateway's connection is one trace there
    for trace in (first, second):
        names = {span.name for span in spans if span.trace_id == trace}
        assert len(names) > 1, names  # the connection and what happened inside it
