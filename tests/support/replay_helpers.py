"""Helpers for the replay tests: recordings as scripts, and clients that drive the engine."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from acp_proxy.protocol.acp import Direction
from acp_proxy.replay.engine import Options, Replay, Step
from acp_proxy.replay.match import Matcher
from acp_proxy.replay.script import build
from acp_proxy.store.replay_rows import RecordedFrame
from tests.support.helpers import observe_all

Exchange = Sequence[tuple[Direction, bytes]]


def recorded(exchange: Exchange, step_ns: int = 1_000_000) -> list[RecordedFrame]:
    _, records = observe_all(exchange, step_ns)
    return [
        RecordedFrame(
            r.seq,
            r.direction,
            r.mono_ns,
            r.raw,
            r.kind,
            r.rpc_id,
            r.method,
            r.update_kind,
            r.request_seq,
            r.session_id,
        )
        for r in records
    ]


def engine(
    exchange: Exchange | list[RecordedFrame],
    options: Options | None = None,
    ignore: Sequence[str] = (),
    now: int = 0,
) -> Replay:
    frames = exchange if exchange and isinstance(exchange[0], RecordedFrame) else None
    rows = frames if frames is not None else recorded(exchange)  # type: ignore[arg-type]
    matcher = Matcher(ignore)
    return Replay(build(rows, matcher), matcher, options or Options(), now)  # type: ignore[arg-type]


def agent_bytes(exchange: Exchange, *, without_notices: bool = True) -> bytes:
    out = []
    for direction, raw in exchange:
        if direction is not Direction.AGENT_TO_CLIENT:
            continue
        if without_notices and b'"sessionUpdate":"notice"' in raw:
            continue
        out.append(raw)
    return b"".join(out)


def client_frames(exchange: Exchange) -> list[bytes]:
    return [raw for d, raw in exchange if d is Direction.CLIENT_TO_AGENT]


def play(replay: Replay, client: Iterable[bytes], now: int = 0, close: bool = True) -> bytes:
    """A client that sends each frame after reading whatever replay had to say before it."""
    out = [replay.advance(now).out]
    for raw in client:
        replay.receive(raw, now)
        out.append(replay.advance(now).out)
    if close:
        replay.client_closed(now)
    step = replay.advance(now)
    out.append(step.out)
    return b"".join(out)


def run_until_done(replay: Replay, now: int, limit: int = 1000) -> tuple[bytes, int]:
    """Advance to each wake-up time until the replay is over; returns output and the end time."""
    out = []
    for _ in range(limit):
        step: Step = replay.advance(now)
        out.append(step.out)
        if step.done:
            return b"".join(out), now
        assert step.wake_at is not None, "a replay that is not over must say when to wake it"
        now = max(now, step.wake_at)
    raise AssertionError("the replay did not end")


def lines(data: bytes) -> list[Any]:
    return [json.loads(x) for x in data.splitlines()]
