"""store/frame_types.py: the typed read of frame columns, its words and its SQL twin."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from acp_proxy.errors import UnreadableRecording
from acp_proxy.store.frame_types import (
    JOINED,
    STORAGE,
    Layout,
    mistyped_sql,
    quoted,
    quoted_sql,
    require_typed,
    wanted,
)
from acp_proxy.store.readers import open_for_reading
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording

# Every value sqlite3 hands back, one strategy per storage class.
_VALUES = {
    "integer": st.integers(min_value=-(2**63), max_value=2**63 - 1),
    "real": st.floats(allow_nan=False),
    "text": st.text(max_size=60),
    "blob": st.binary(max_size=60),
    "null": st.none(),
}
_STORAGE_OF = {int: "integer", float: "real", str: "text", bytes: "blob", type(None): "null"}
_NAMES = st.sampled_from(sorted(STORAGE)).flatmap(
    lambda name: st.sampled_from([name, name + JOINED])
)


@st.composite
def layouts_and_rows(draw: st.DrawFn) -> tuple[list[str | None], list[Any]]:
    columns = draw(st.lists(st.one_of(_NAMES, st.none()), min_size=1, max_size=12))
    row = [draw(st.one_of(*_VALUES.values())) for _ in columns]
    return columns, row


def _allowed(column: str | None, value: object) -> bool:
    if column is None:
        return True
    if column.endswith(JOINED) and value is None:
        return True
    return _STORAGE_OF[type(value)] in STORAGE[column.removesuffix(JOINED)]


@settings(max_examples=400, deadline=None)
@given(layouts_and_rows())
def test_a_row_is_taken_exactly_when_every_value_is_of_its_columns_type(
    drawn: tuple[list[str | None], list[Any]],
) -> None:
    columns, row = drawn
    layout = Layout(columns)
    wrong = [(c, v) for c, v in zip(columns, row, strict=True) if not _allowed(c, v)]
    found = layout.problem(row)
    if not wrong:
        assert found is None
        return
    assert found is not None
    assert found[0] == wrong[0][0]
    assert found[1] is wrong[0][1]


@settings(max_examples=200, deadline=None)
@given(st.one_of(*_VALUES.values()))
def test_a_value_is_quoted_as_sqlite_quotes_it(value: object) -> None:
    assume(not (isinstance(value, str) and "\x00" in value))  # SQLite's quote ends text at NUL
    db = sqlite3.connect(":memory:")
    expected = db.execute(f"SELECT {quoted_sql('?1')}", (value,)).fetchone()[0]
    if isinstance(value, float):  # SQLite writes reals its own way; the kind is what matters
        assert quoted(value) == repr(value)
        return
    assert quoted(value) == expected


def test_wanted_says_the_storage_classes_in_words() -> None:
    assert wanted("seq") == "integer"
    assert wanted("method") == "text or NULL"
    assert wanted("rpc_id") == "integer, real, text or NULL"


def _tampered(path: Path, seq: int, column: str, value: str) -> None:
    write_recording(path, V1_CONVERSATION)
    db = sqlite3.connect(path)
    db.execute(f"UPDATE frame SET {column} = {value} WHERE seq = ?", (seq,))
    db.commit()
    db.close()


def test_the_sql_condition_agrees_with_the_row_check(db_path: Path) -> None:
    _tampered(db_path, 6, "kind", "X'00'")
    db = open_for_reading(db_path)
    columns = sorted(STORAGE)
    flagged = db.execute(
        f"SELECT seq FROM frame WHERE {mistyped_sql(columns)} ORDER BY seq"
    ).fetchall()
    assert flagged == [(6,)]
    layout = Layout(columns)
    rows = db.execute(f"SELECT {', '.join(columns)} FROM frame ORDER BY seq").fetchall()
    assert [r[columns.index("seq")] for r in rows if layout.problem(r)] == [6]


def test_the_message_names_the_file_connection_frame_column_and_value(db_path: Path) -> None:
    _tampered(db_path, 6, "mono_ns", "'soon'")
    db = open_for_reading(db_path)
    rows = db.execute("SELECT seq, mono_ns FROM frame ORDER BY seq").fetchall()
    with pytest.raises(UnreadableRecording) as raised:
        Layout(["seq", "mono_ns"]).check(db, rows, 1)
    assert str(raised.value) == (
        f"{db_path}: connection 1, frame 6, holds mono_ns = 'soon', not integer: the database "
        "was changed by something other than acp-proxy"
    )
    with pytest.raises(UnreadableRecording, match="frame 6, holds mono_ns"):
        require_typed(db, 1, ["mono_ns"])
    require_typed(db, 1, ["raw", "kind"])  # what is typed passes


def test_a_wrong_seq_names_no_seq(db_path: Path) -> None:
    _tampered(db_path, 6, "seq", "'six'")
    db = open_for_reading(db_path)
    with pytest.raises(UnreadableRecording, match="connection 1, a frame, holds seq = 'six'"):
        require_typed(db, None, ["seq"])
