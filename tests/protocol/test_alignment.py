"""protocol/alignment.py: aligned messages and field-level changes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol.alignment import align, changes, present


def test_an_extra_message_does_not_shift_the_rest() -> None:
    pairs = align(["a", "b", "c", "d"], ["a", "x", "b", "c", "d"])
    assert pairs == [(0, 0), (None, 1), (1, 2), (2, 3), (3, 4)]
    assert align(["a", "b"], ["a", "c"]) == [(0, 0), (1, 1)]  # changed: side by side
    assert align(["a", "b", "c"], ["a"]) == [(0, 0), (1, None), (2, None)]


@given(
    st.lists(st.sampled_from("abcd"), max_size=12), st.lists(st.sampled_from("abcd"), max_size=12)
)
def test_every_message_appears_once_in_order(left: list[str], right: list[str]) -> None:
    pairs = align(left, right)
    assert [i for i, _ in pairs if i is not None] == list(range(len(left)))
    assert [j for _, j in pairs if j is not None] == list(range(len(right)))


def test_changes_name_every_differing_field() -> None:
    x = {"params": {"a": 1, "b": [1, 2], "gone": True}, "same": "s"}
    y = {"params": {"a": 2, "b": [1], "new": None}, "same": "s"}
    found = {path: (u, v) for path, u, v in changes(x, y)}
    assert set(found) == {"$.params.a", "$.params.b[1]", "$.params.gone", "$.params.new"}
    assert found["$.params.a"] == (1, 2)
    assert not present(found["$.params.b[1]"][1])
    assert not present(found["$.params.new"][0])
    assert found["$.params.new"][1] is None  # present, and null
    assert changes(x, x) == []
    assert len(changes({"k": list(range(100))}, {"k": []}, limit=7)) == 7
    assert changes(1, True) == [("$", 1, True)]  # a number is not a boolean
