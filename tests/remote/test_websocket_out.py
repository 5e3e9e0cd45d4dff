"""remote/websocket_out.py: messages given together reach the client in one write, in order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypercorn.asyncio.tcp_server import TCPServer
from hypercorn.config import Config
from hypercorn.events import RawData
from hypothesis import given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from wsproto.frame_protocol import FrameProtocol

from acp_proxy.remote.websocket_out import MessageWriter, base_frame
from tests.support.remote_peers import free_port

pytestmark = [pytest.mark.timeout(60)]

BURST: list[str | bytes] = [f'{{"n":{n},"text":"{"é" * n}"}}' for n in range(50)] + [b"\x01\x02"]


async def _serve_one_burst(
    compression: str | None, writes: list[bytes]
) -> tuple[list[Any], bool, int]:
    """hypercorn serving an app that sends ``BURST`` with one ``MessageWriter.send`` once the
    client says go; the messages the client got, whether the writer joined them, and how many
    socket writes the send made."""
    import hypercorn.asyncio

    joined: list[bool] = []
    burst_writes: list[int] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.accept"})
        offered = any(name == b"sec-websocket-extensions" for name, _ in scope["headers"])
        writer = MessageWriter(send, offered)
        joined.append(writer.joins)
        await receive()  # the client's go
        writes.clear()
        await writer.send(BURST)
        burst_writes.append(len(writes))
        await receive()  # the client's close

    port = free_port()
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    config.errorlog = None
    stop = asyncio.Event()
    server = asyncio.ensure_future(
        hypercorn.asyncio.serve(app, config, shutdown_trigger=stop.wait, mode="asgi")  # type: ignore[arg-type]
    )
    try:
        for _ in range(200):
            try:
                ws = await connect(f"ws://127.0.0.1:{port}/", compression=compression)
                break
            except OSError:
                await asyncio.sleep(0.02)
        async with ws:
            await ws.send("go")
            got = [await ws.recv() for _ in BURST]
    finally:
        stop.set()
        await server
    return got, joined[0], burst_writes[0]


@pytest.mark.parametrize("compression", [None, "deflate"])
def test_messages_given_together_go_in_one_write(
    monkeypatch: pytest.MonkeyPatch, compression: str | None
) -> None:
    writes: list[bytes] = []
    protocol_send = TCPServer.protocol_send

    async def counting(self: TCPServer, event: Any) -> None:
        if isinstance(event, RawData):
            writes.append(event.data)
        await protocol_send(self, event)

    monkeypatch.setattr(TCPServer, "protocol_send", counting)
    got, joined, burst_writes = asyncio.run(_serve_one_burst(compression, writes))
    assert joined
    assert got == BURST
    assert burst_writes == 1


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.binary()), st.sampled_from([0, 125, 126, 65_535, 65_536, 70_000]))
def test_a_base_frame_is_the_frame_wsproto_builds(payload: str | bytes, padding: int) -> None:
    if isinstance(payload, str):
        payload += "x" * padding
        expected = FrameProtocol(client=False, extensions=[]).send_data(payload, fin=True)
        assert base_frame(0x81, payload.encode()) == expected
    else:
        payload += b"x" * padding
        expected = FrameProtocol(client=False, extensions=[]).send_data(payload, fin=True)
        assert base_frame(0x82, payload) == expected


def test_another_server_gets_one_asgi_send_per_message() -> None:
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    writer = MessageWriter(send)
    assert not writer.joins
    asyncio.run(writer.send(["a", b"b", "c"]))
    assert sent == [
        {"type": "websocket.send", "text": "a"},
        {"type": "websocket.send", "bytes": b"b"},
        {"type": "websocket.send", "text": "c"},
    ]
