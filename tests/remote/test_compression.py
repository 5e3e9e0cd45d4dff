"""Compressed answers and event streams: forwarded as they came, recorded decoded, bounded."""

from __future__ import annotations

import contextlib
import itertools
import json
import sqlite3
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import brotli  # type: ignore[import-untyped]
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.remote.content_coding import PIECE_BYTES, Decoder, Undecodable, decode_body
from tests.support.remote_peers import TOOLS, Listener, free_port, serving

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
JSON = {"content-type": "application/json"}


def _gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)
    return packer.compress(data) + packer.flush()


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


CODERS = {
    "gzip": _gzip, "deflate": zlib.compress, "br": brotli.compress,
    "x-gzip": _gzip,
}  # fmt: skip


@given(
    st.binary(max_size=3000),
    st.lists(st.sampled_from(sorted(CODERS)), min_size=1, max_size=3),
    st.lists(st.integers(min_value=0), max_size=6),
)
def test_any_coding_in_any_chunking_decodes_to_the_body(
    body: bytes, applied: list[str], cuts: list[int]
) -> None:
    encoded = body
    for name in applied:
        encoded = CODERS[name](encoded)
    points = [0, *sorted(cut % (len(encoded) + 1) for cut in cuts), len(encoded)]
    decoder = Decoder(applied)
    out = b"".join(
        piece for a, b in itertools.pairwise(points) for piece in decoder.feed(encoded[a:b])
    )
    decoder.end()
    assert out == body
    assert decode_body(encoded, ", ".join(applied), len(body)) == body


def test_raw_deflate_as_some_servers_send_it() -> None:
    assert decode_body(_raw_deflate(b"{}" * 100), "deflate", 1000) == b"{}" * 100


def test_a_bomb_decodes_in_bounded_pieces_and_stops_at_the_limit() -> None:
    bomb = _gzip(b"\0" * (64 * 1024 * 1024))
    pieces = Decoder(["gzip"]).feed(bomb)
    assert all(len(piece) <= PIECE_BYTES for piece in itertools.islice(pieces, 5))
    with pytest.raises(Undecodable, match="more than 1048576 bytes"):
        decode_body(bomb, "gzip", 1024 * 1024)


@pytest.mark.parametrize(
    ("header", "body", "why"),
    [
        ("gzip", b"not gzip at all", "does not decode"),
        ("gzip", _gzip(b"x" * 1000)[:-9], "ends early"),
        ("br", b"\xff\xff\xff", "does not decode"),
        ("zstd", b"whatever", "does not decode"),
    ],
)
def test_what_does_not_decode_says_why(header: str, body: bytes, why: str) -> None:
    with pytest.raises(Undecodable, match=why if header != "zstd" else "acp-proxy does not"):
        decode_body(body, header, 1 << 20)


# --- through the listener, a real compressing server (aiohttp) --------------------------


@contextlib.contextmanager
def _agent(coding: str, *options: str) -> Iterator[str]:
    port = free_port()
    argv = [sys.executable, str(TOOLS / "compressing_agent.py"), str(port), coding, *options]
    with serving(argv, port) as url:
        yield url


def _raw(method: str, url: str, **settings: Any) -> tuple[int, str | None, bytes]:
    """Status, Content-Encoding and the body's bytes as they came (not decoded)."""
    with httpx.stream(method, url, timeout=30, **settings) as answer:
        return (
            answer.status_code,
            answer.headers.get("content-encoding"),
            b"".join(answer.iter_raw()),
        )


def _frames(db: Path) -> list[bytes]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT raw FROM frame WHERE direction = 'a2c' ORDER BY seq")
        return [bytes(raw) for (raw,) in rows]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_compressed_bodies_pass_unchanged_and_are_recorded_decoded(
    tmp_path: Path, coding: str
) -> None:
    db = tmp_path / "r.db"
    events = 200
    with _agent(coding, str(events)) as upstream, Listener(db, upstream) as listener:
        seen = {}
        for name, url in (("direct", upstream), ("proxied", listener.url)):
            post = _raw("POST", url, content=INITIALIZE, headers=JSON)
            stream = _raw("GET", url, headers={"acp-connection-id": "c0ffee"})
            seen[name] = (post, stream)
        _raw("DELETE", listener.url, headers={"acp-connection-id": "c0ffee"})
    assert seen["proxied"] == seen["direct"]  # statuses, codings and bytes, unchanged
    (_, post_coding, post_body), (_, stream_coding, stream_body) = seen["proxied"]
    assert (post_coding, stream_coding) == (coding, coding)
    assert post_body != decode_body(post_body, coding, 1 << 20)  # it really is compressed
    answer, *updates = _frames(db)
    assert json.loads(answer)["result"] == {"protocolVersion": 1}
    plain = decode_body(stream_body, coding, 1 << 24)
    assert updates == [block[6:] for block in plain.split(b"\n\n")[:-1]]
    assert len(updates) == events
    assert not [line for line in listener.stderr_lines if "listening on" not in line]


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


@pytest.mark.timeout(90)
def test_a_decompression_bomb_is_forwarded_and_counted_not_recorded(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    bomb = 256 * 1024 * 1024  # decoded; the listener decodes at most 16 MiB of an answer
    with _agent("gzip", "--bomb", str(bomb)) as upstream, Listener(db, upstream) as listener:
        before = _peak_rss_kib(listener.process.pid)
        direct = _raw("POST", upstream, content=INITIALIZE, headers=JSON)
        proxied = _raw("POST", listener.url, content=INITIALIZE, headers=JSON)
        peak = _peak_rss_kib(listener.process.pid)
    assert proxied == direct
    assert len(proxied[2]) < 1024 * 1024  # small on the wire
    assert peak - before < 64 * 1024, (before, peak)  # not the 256 MiB it decodes to
    with contextlib.closing(sqlite3.connect(db)) as conn:
        [(lost, error)] = conn.execute("SELECT frames_lost, error FROM connection").fetchall()
    assert lost == 1
    assert "decodes to more than" in error
    said = [line for line in listener.stderr_lines if "decodes to more than" in line]
    assert len(said) == 1, listener.stderr_lines
