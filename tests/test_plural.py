"""Counted nouns: one is singular, every other count plural."""

from __future__ import annotations

import pytest

from acp_proxy.plural import counted, noun


@pytest.mark.parametrize(
    ("count", "expected"),
    [(0, "0 turns"), (1, "1 turn"), (2, "2 turns"), (-1, "-1 turns")],
)
def test_counted_turns(count: int, expected: str) -> None:
    assert counted(count, "turn") == expected


def test_an_irregular_plural_and_grouping() -> None:
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(12_000, "entry", "entries", grouped=True) == "12,000 entries"
    assert noun(2, "was", "were") == "were"
