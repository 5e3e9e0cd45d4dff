"""``record --listen --check``: the schemas are loaded once for the listener, not once per
connection."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.remote.test_connection_life import INITIALIZE, JSON
from tests.support.remote_peers import Listener, fake_agent

pytestmark = [pytest.mark.timeout(90)]


def test_many_connections_share_one_schema_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Schemas that cannot be had: every load says so, so the lines count the loads.
    monkeypatch.setenv("ACP_PROXY_SCHEMAS", str(tmp_path / "no-schemas"))
    db = tmp_path / "r.db"
    with fake_agent(tmp_path / "log") as upstream, Listener(db, upstream, "--check") as listener:
        for _ in range(3):
            opened = httpx.post(listener.url, content=INITIALIZE, headers=JSON)
            cid = opened.headers["acp-connection-id"]
            httpx.request("DELETE", listener.url, headers={"acp-connection-id": cid})
    loads = [line for line in listener.stderr_lines if "record --check:" in line]
    assert len(loads) == 1, listener.stderr_lines
