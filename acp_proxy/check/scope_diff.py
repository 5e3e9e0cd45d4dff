"""Diffing two recorded scopes: the one way ``diff``, the MCP server and the inspector compare.

Rules:
- Each side is a database and a ``Scope`` (what a REF names: a connection or one session of
  it); how a surface turns its REFs into sides is its own business (a file, another database,
  a redacted copy), what is compared is not: the frames of each scope in ``seq`` order,
  through ``protocol.diffing`` (``items``, then ``compare``).
- ``--ignore`` paths are checked once, before anything is read (``check_ignore``): a bad one is
  a ``ValueError`` the surface words as its own usage mistake.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from acp_proxy.protocol.diffing import Diff, Item, compare, items
from acp_proxy.protocol.normalize import parse_path
from acp_proxy.store.frames import frames
from acp_proxy.store.readers import Database
from acp_proxy.store.refs import Scope

Side = tuple[Database, Scope]


@dataclass(frozen=True, slots=True)
class ScopeDiff:
    """The comparison of two scopes and the comparable messages of each (per direction)."""

    diff: Diff
    a: dict[str, list[Item]]
    b: dict[str, list[Item]]


def check_ignore(ignore: Sequence[str]) -> None:
    """Raise ``ValueError`` (saying why) for the first path that is not a valid JSON path."""
    for path in ignore:
        parse_path(path)


def diff_scopes(a: Side, b: Side, *, strict: bool = False, ignore: Sequence[str] = ()) -> ScopeDiff:
    """Compare the frames of side ``a`` with those of side ``b`` (``strict``: raw bytes)."""
    check_ignore(ignore)
    a_items, b_items = (
        items(frames(db, target), strict=strict, ignore=ignore) for db, target in (a, b)
    )
    return ScopeDiff(compare(a_items, b_items), a_items, b_items)
