"""Undoing an HTTP ``Content-Encoding`` for the recording, in bounded pieces.

Rules:
- Only the recording sees decoded bytes: the proxy forwards the body exactly as it came, and
  decodes a copy to cut messages out of it.
- ``gzip`` (and ``x-gzip``), ``deflate`` (zlib-wrapped as HTTP says, or raw deflate as some
  servers send it) and ``br`` (when the ``brotli`` module is installed; it comes with the
  ``remote`` extra) are decoded; several codings are undone last one first; ``identity`` is
  none. Any other coding is ``Undecodable``.
- Decoding never holds more than ``PIECE_BYTES`` of output at a time: ``feed`` yields the
  output in pieces of at most that size, however much the input expands, so a decompression
  bomb costs time piece by piece, never memory. ``decode_body`` stops at ``limit`` decoded
  bytes (``Undecodable``: the answer is not recorded, the loss is counted by the caller).
- Bytes that do not decode, or a body that ends before its compressed data does, are
  ``Undecodable``; its ``reason`` names the kind of fault, never the sizes (one line each kind).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

PIECE_BYTES = 1024 * 1024


class Undecodable(Exception):
    """A body the recording cannot decode; ``str()`` says why, the same words each time."""


def codings(header_value: str | None) -> list[str]:
    """The codings of a ``Content-Encoding`` value in the order they were applied."""
    if not header_value:
        return []
    named = [part.strip().lower() for part in header_value.split(",")]
    return [name for name in named if name and name != "identity"]


class _Zlib:
    def __init__(self, name: str) -> None:
        self._name = name
        self._wbits = zlib.MAX_WBITS | 16 if name in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self._stage = zlib.decompressobj(self._wbits)
        self._out = False  # whether any output came (deflate: raw is tried only before)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                out = self._stage.decompress(data, PIECE_BYTES)
            except zlib.error:
                if self._name == "deflate" and not self._out and self._wbits > 0:
                    self._wbits = -zlib.MAX_WBITS  # raw deflate, no zlib header
                    self._stage = zlib.decompressobj(self._wbits)
                    continue
                raise Undecodable(
                    f"a body in Content-Encoding {self._name} that does not decode"
                ) from None
            data = self._stage.unconsumed_tail
            if out:
                self._out = True
                yield out
            if self._stage.eof:
                rest = self._stage.unused_data
                if rest and self._wbits & 16:  # gzip members one after another
                    self._stage = zlib.decompressobj(self._wbits)
                    data = rest
                elif rest:
                    raise Undecodable(
                        f"a body in Content-Encoding {self._name} with bytes after its end"
                    )

    def end(self) -> None:
        if not self._stage.eof:
            raise Undecodable(f"a body in Content-Encoding {self._name} that ends early")


class _Brotli:
    def __init__(self, module: Any) -> None:
        self._module = module
        self._stage = module.Decompressor()

    def feed(self, data: bytes) -> Iterator[bytes]:
        stage = self._stage
        try:
            out = stage.process(data, output_buffer_limit=PIECE_BYTES)
            while True:
                if out:
                    yield out
                if stage.can_accept_more_data():
                    return
                out = stage.process(b"", output_buffer_limit=PIECE_BYTES)
        except self._module.error:
            raise Undecodable("a body in Content-Encoding br that does not decode") from None

    def end(self) -> None:
        if not self._stage.is_finished():
            raise Undecodable("a body in Content-Encoding br that ends early")


def _stage(name: str) -> _Zlib | _Brotli:
    if name in ("gzip", "x-gzip", "deflate"):
        return _Zlib(name)
    if name == "br":
        try:
            import brotli  # type: ignore[import-untyped]
        except ImportError:
            raise Undecodable(
                "a body in Content-Encoding br (the brotli module is not installed)"
            ) from None
        return _Brotli(brotli)
    raise Undecodable(f"a body in Content-Encoding {name}, which acp-proxy does not decode")


class Decoder:
    """One body's decoding: ``feed`` each piece as it arrives, ``end`` once it is whole."""

    def __init__(self, applied: list[str]) -> None:
        self._stages = [_stage(name) for name in reversed(applied)]

    def feed(self, data: bytes) -> Iterator[bytes]:
        yield from self._through(data, 0)

    def _through(self, data: bytes, index: int) -> Iterator[bytes]:
        if index == len(self._stages):
            yield data
            return
        for piece in self._stages[index].feed(data):
            yield from self._through(piece, index + 1)

    def end(self) -> None:
        for stage in self._stages:
            stage.end()


def decode_body(body: bytes, header_value: str | None, limit: int) -> bytes:
    """A whole body decoded; ``Undecodable`` past ``limit`` decoded bytes."""
    applied = codings(header_value)
    if not applied:
        return body
    decoder = Decoder(applied)
    pieces: list[bytes] = []
    size = 0
    for piece in decoder.feed(body):
        size += len(piece)
        if size > limit:
            raise Undecodable(f"a compressed body that decodes to more than {limit} bytes")
        pieces.append(piece)
    decoder.end()
    return b"".join(pieces)
