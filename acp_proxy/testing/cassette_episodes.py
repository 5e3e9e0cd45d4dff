"""Sans-I/O: the episodes of a cassette, and whether a new conversation repeats one of them.

Rules:
- A cassette file holds one JSONL export (docs/recording-format.md) per episode, one after
  the other: every line holding a top-level ``"format"`` member starts the next one (frame
  lines never have one). ``split`` gives each episode's bytes, exactly as they are in the file,
  so appending an episode never changes the bytes of those already there.
- Two conversations are compared as ``diff`` compares them (diffing.py: each direction on its
  own, normalized: JSON-RPC ids, minted ids, timestamps), leaving out what depends on the
  machine the client runs on, as replay's matching does (``cwd``, ``additionalDirectories``,
  ``_meta``), and the caller's ``ignore`` paths.
- ``repeats(new, episodes)`` is the first episode whose client side is the new
  conversation's, with the full comparison (both sides) of the two; None when the client said
  something no episode holds.
- Pure: bytes in, values out.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import orjson

from acp_proxy.protocol.diffing import Diff, Item, compare, items
from acp_proxy.protocol.observer import ConnectionObserver, FrameRecord
from acp_proxy.store.jsonl import is_header

MACHINE_PATHS = ("$..cwd", "$..additionalDirectories", "$.._meta")


def split(data: bytes) -> list[bytes]:
    """The episodes of a cassette file, each as its exact bytes."""
    starts = [0] if data else []
    position = 0
    for line in data.splitlines(keepends=True):
        if position and is_header(line):
            starts.append(position)
        position += len(line)
    ends = [*starts[1:], len(data)] if starts else []
    return [data[start:end] for start, end in zip(starts, ends, strict=True)]


def rows(episode: bytes) -> Iterator[FrameRecord]:
    """The frames of one episode as the observer reads them (header and blank lines skipped)."""
    observer = ConnectionObserver()
    for line in episode.splitlines():
        if not line.strip() or is_header(line):
            continue
        record = orjson.loads(line)
        if "raw_base64" in record:
            raw = base64.b64decode(record["raw_base64"])
        else:
            raw = str(record.get("raw", "")).encode()
        yield observer.row(int(record["seq"]), str(record["direction"]), raw)


class Repeat(NamedTuple):
    episode: int  # the episode repeated, from 0
    diff: Diff  # both sides of the new conversation against that episode


def _comparable(episode: bytes, ignore: Sequence[str]) -> dict[str, list[Item]]:
    return items(rows(episode), strict=False, ignore=[*MACHINE_PATHS, *ignore])


def repeats(new: bytes, episodes: Sequence[bytes], ignore: Sequence[str] = ()) -> Repeat | None:
    """The first episode whose client side is ``new``'s (see the module rules)."""
    fresh = _comparable(new, ignore)
    for index, episode in enumerate(episodes):
        old = _comparable(episode, ignore)
        if compare({"c2a": old["c2a"], "a2c": []}, {"c2a": fresh["c2a"], "a2c": []}).equal:
            return Repeat(index, compare(old, fresh))
    return None
