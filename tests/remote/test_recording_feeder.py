"""remote/recording.py: what one turn of the event loop gives the hub goes in one write."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from acp_proxy.protocol.acp import Direction
from acp_proxy.record import hub as hub_module
from acp_proxy.record.hub import RecordingHub
from acp_proxy.remote.recording import HubFeeder

A2C = Direction.AGENT_TO_CLIENT
BODY = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","n":%d}}'

pytestmark = [pytest.mark.timeout(60)]


def test_a_turns_records_wait_for_its_end_then_go_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path = tmp_path / "r.db"
    hub = RecordingHub.start(db_path, lambda _: None)
    writes: list[int] = []
    write = hub_module.os.write

    def counting(fd: int, data: bytes) -> int:
        if fd == hub.fileno():
            writes.append(len(data))
        return write(fd, data)

    async def main() -> tuple[int, int]:
        feeder = HubFeeder(hub, 1.0)
        key, _ = feeder.open("websocket", remote_url="http://up/acp")
        exchange = feeder.exchange(key, method="GET", target="/acp", stream="websocket")
        await asyncio.sleep(0)  # the opening's records go at the end of their turn
        monkeypatch.setattr(hub_module.os, "write", counting)
        for n in range(300):
            await feeder.message(key, A2C, BODY % n, exchange, "websocket")
        await feeder.messages(key, A2C, [BODY % n for n in range(300, 500)], exchange, "websocket")
        during = len(writes)
        await asyncio.sleep(0)  # the turn ends
        after = len(writes)
        monkeypatch.undo()
        feeder.close(key, "closed")
        feeder.stop()
        return during, after

    during, after = asyncio.run(main())
    assert (during, after) == (0, 1)
    assert hub.finish(60) == "recorded"
    with sqlite3.connect(db_path) as db:
        raws = [r[0] for r in db.execute("SELECT raw FROM frame ORDER BY seq")]
        status = db.execute("SELECT status FROM connection").fetchall()
    assert raws == [BODY % n for n in range(500)]
    assert status == [("closed",)]


def test_a_call_after_the_loop_has_ended_goes_to_the_pipe_at_once(tmp_path: Path) -> None:
    db_path = tmp_path / "r.db"
    hub = RecordingHub.start(db_path, lambda _: None)

    async def main() -> tuple[HubFeeder, int]:
        feeder = HubFeeder(hub, 1.0)
        key, _ = feeder.open("websocket", remote_url="http://up/acp")
        return feeder, key

    feeder, key = asyncio.run(main())
    feeder.close(key, "dropped", "the listener stopped")
    assert hub.pending == 0
    assert hub.finish(60) == "recorded"
    with sqlite3.connect(db_path) as db:
        rows = db.execute("SELECT status, error FROM connection").fetchall()
    assert rows == [("dropped", "the listener stopped")]
