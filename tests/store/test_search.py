"""store/search.py and the index upkeep (search_index.py, writer.py): what is indexed,
catch-up, queries."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.errors import RecordingError
from acp_proxy.store import schema
from acp_proxy.store import writer as writer_module
from acp_proxy.store.database import connect
from acp_proxy.store.search import (
    BadPattern,
    SearchQuery,
    catch_up,
    fts_phrase,
    index_state,
    search,
)
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import A2C, C2A, ERR, line, observe_all, write_recording


def _update(text: str) -> bytes:
    return line({"jsonrpc": "2.0", "method": "session/update",
                 "params": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": text}}}})  # fmt: skip


def _write(db_path: Path, exchange: list[tuple[object, bytes]], *, index: bool = True) -> int:
    _, records = observe_all(exchange)  # type: ignore[arg-type]
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["a"], "/", "t", 1), index=index)
    writer.append(records)
    db.close()
    return writer.connection_id


def _seqs(db_path: Path, pattern: str, **options: object) -> list[int]:
    db = connect(db_path)
    return [hit.seq for hit in search(db, SearchQuery(pattern, **options))]  # type: ignore[arg-type]


def test_the_writer_indexes_its_frames_as_it_commits_them(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION)
    db = connect(db_path)
    assert index_state(db).pending == 0
    hits = list(search(db, SearchQuery("zed")))
    assert [(h.connection_id, h.seq, h.method) for h in hits] == [
        (1, 1, "initialize"),
        (1, 13, "_zed.dev/ping"),
    ]
    assert "\x02zed\x03" in hits[0].snippet


def test_json_escapes_are_undone_before_indexing(db_path: Path) -> None:
    raw = b'{"jsonrpc":"2.0","method":"session/update",'
    raw += b'"params":{"t":"one\\ntwo caf\\u00e9 \\"q\\""}}\n'
    _write(db_path, [(A2C, raw)])
    for pattern in ("two", "one two", "café", "CAFE", '"q"', "q"):
        assert _seqs(db_path, pattern) == [1], pattern
    assert _seqs(db_path, "ntwo") == []  # the escape's letter is not glued to the word
    assert _seqs(db_path, "jsonrpc") == []  # keys are not words of the frame


def test_prefix_and_phrase(db_path: Path) -> None:
    _write(db_path, [(A2C, _update("permission denied for /etc/passwd")), (A2C, _update("denied"))])
    assert _seqs(db_path, "permission den") == [1]
    assert _seqs(db_path, "denied") == [1, 2]
    assert _seqs(db_path, "denied permission") == []


@pytest.mark.parametrize(
    "pattern",
    ['say "NOT"', "NOT", "OR that*", "(this)", "NEAR(a b)", "text:", "^start", "-minus", "a AND",
     '"', "*", "col:val + x", "'single'"],
)  # fmt: skip
def test_fts_syntax_is_taken_literally(db_path: Path, pattern: str) -> None:
    text = "say \"NOT\" (this) OR that* NEAR(a b) text: ^start -minus a AND 'single' col:val + x"
    _write(db_path, [(A2C, _update(text)), (ERR, b"something else entirely\n")])
    assert _seqs(db_path, pattern) == [1]


def test_a_pattern_without_words_is_a_literal_substring(db_path: Path) -> None:
    _write(db_path, [(A2C, _update("a -> b")), (A2C, _update("a b"))])
    assert fts_phrase("->") is None
    assert _seqs(db_path, "->") == [1]


def test_stderr_lines_and_non_json_are_indexed_whole(db_path: Path) -> None:
    _write(db_path, [(ERR, b"ENOENT: no such file '/tmp/x'\n"), (A2C, b"not json {\n")])
    assert _seqs(db_path, "enoent no such") == [1]
    assert _seqs(db_path, "not json") == [2]


def test_long_unbroken_strings_are_left_out_of_the_index(db_path: Path) -> None:
    blob = "QUFB" * 200
    _write(db_path, [(A2C, _update(blob)), (A2C, _update("short QUFBQUFB"))])
    assert _seqs(db_path, "QUFBQUFB") == [2]
    assert _seqs(db_path, "QUFBQUFBQUFBQUFB", regex=True) == [1]


def test_frames_that_are_not_utf8_do_not_break_anything(db_path: Path) -> None:
    _write(db_path, [(A2C, b"\xff\xfe bad bytes\n"), (A2C, _update("fine"))])
    assert _seqs(db_path, "fine") == [2]
    assert _seqs(db_path, "bad bytes", regex=True) == [1]


def test_regex_and_its_errors(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION)
    assert _seqs(db_path, r'"code":\s*-32602', regex=True) == [16]
    assert _seqs(db_path, r'"CODE"', regex=True) == []
    assert _seqs(db_path, r'"CODE"', regex=True, ignore_case=True) != []
    with pytest.raises(BadPattern, match="bad regular expression"):
        _seqs(db_path, "(", regex=True)


def test_filters_and_paging(db_path: Path) -> None:
    first = write_recording(db_path, V1_CONVERSATION)
    second = write_recording(db_path, V1_CONVERSATION)
    assert set(_seqs(db_path, "session", connections=[second])) == set(
        _seqs(db_path, "session", connections=[first])
    )
    assert _seqs(db_path, "session", method="session/new") == [4, 4]
    assert _seqs(db_path, "session", method="session/new", direction="agent") == []
    assert _seqs(db_path, "session", since_ns=2 * 10**18) == []
    db = connect(db_path)
    every = list(search(db, SearchQuery("session")))
    page = list(search(db, SearchQuery("session", after=every[2].frame_id, limit=2)))
    assert page == every[3:5]


def test_catch_up_indexes_what_the_writer_did_not(db_path: Path) -> None:
    _write(db_path, [(A2C, _update(f"word{i} common")) for i in range(12)], index=False)
    db = connect(db_path)
    state = index_state(db)
    assert (state.pending, state.connections) == (12, [1])
    assert list(search(db, SearchQuery("common"))) == []
    steps: list[int] = []
    database_batch = 5
    pytest.MonkeyPatch().setattr("acp_proxy.store.search.CATCH_UP_BATCH", database_batch)
    assert catch_up(db, progress=steps.append) == 12
    assert steps == [5, 5, 2]
    assert index_state(db).pending == 0
    assert len(_seqs(db_path, "common")) == 12
    assert catch_up(db) == 0  # nothing twice: each frame is indexed once
    assert len(_seqs(db_path, "word3")) == 1


def test_an_older_database_is_indexed_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path, isolation_level=None)
    for version in range(3):
        for statement in schema.statements(schema.MIGRATIONS[version]):
            old.execute(statement)
    old.execute("PRAGMA user_version = 3")
    old.close()
    _observer, records = observe_all(V1_CONVERSATION)
    plain = sqlite3.connect(path, isolation_level=None)
    plain.execute(
        "INSERT INTO connection (id, uid, status, started_ns, argv, cwd, "
        "proxy_version, proxy_pid) VALUES (1, 'u', 'exited', 1, '[]', '/', 'old', 1)"
    )
    columns = ", ".join(records[0]._fields)
    marks = ", ".join("?" for _ in records[0]._fields)
    plain.executemany(f"INSERT INTO frame (connection_id, {columns}) VALUES (1, {marks})",
                      [tuple(r) for r in records])  # fmt: skip
    plain.close()
    db = connect(path)  # migrates to the format with the index, indexing nothing yet
    assert index_state(db).pending == len(records)
    catch_up(db)
    assert _seqs(path, "zed") == [1, 13]


def test_an_index_failure_never_costs_a_frame(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(db: sqlite3.Connection, connection_id: int, limit: int | None = None) -> int:
        db.execute("INSERT INTO search_progress (connection_id, indexed_seq) VALUES (1, 99)")
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(writer_module, "index_frames", broken)
    _, records = observe_all(V1_CONVERSATION)
    db = connect(db_path)
    writer = RecordingWriter.start(db, NewConnection(["a"], "/", "t", 1))
    writer.append(records[:5])
    writer.append(records[5:])  # not indexed again once it failed
    assert writer.index_error == "disk I/O error"
    assert db.execute("SELECT count(*) FROM frame").fetchone()[0] == len(records)
    assert db.execute("SELECT count(*) FROM search_progress").fetchone()[0] == 0
    monkeypatch.undo()
    catch_up(db)
    assert _seqs(db_path, "zed") == [1, 13]


def test_a_database_that_cannot_be_written_is_searched_as_far_as_it_is_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_proxy.store import search as search_module

    indexed, old = tmp_path / "indexed.sqlite", tmp_path / "old.sqlite"
    write_recording(indexed, V1_CONVERSATION)
    from acp_proxy.store.schema import MIGRATIONS, statements

    format_3 = sqlite3.connect(old)  # a recording database from before full-text search
    for step in MIGRATIONS[:3]:
        for statement in statements(step):
            format_3.execute(statement)
    format_3.execute("PRAGMA user_version = 3")
    format_3.commit()
    format_3.close()

    def refuse(path: Path, **options: object) -> sqlite3.Connection:
        raise RecordingError(f"cannot open recording database {path}: readonly")

    monkeypatch.setattr(search_module, "connect", refuse)
    db, writable = search_module.open_for_search(indexed)
    assert not writable
    assert [h.seq for h in search(db, SearchQuery("zed"))] == [1, 13]
    with pytest.raises(RecordingError, match="no search index"):
        search_module.open_for_search(old)


_TEXT = st.text(
    alphabet=st.sampled_from(list("ab Z9é\"'*()^:-+{}NOTANDORNEAR_\\/.")), min_size=1, max_size=24
)


@settings(max_examples=60, deadline=None)
@given(text=_TEXT)
def test_any_pattern_finds_the_frame_that_says_it(tmp_path_factory: pytest.TempPathFactory,
                                                 text: str) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("search") / "r.sqlite"
    _write(path, [(C2A, _update(text)), (A2C, _update("zzz"))])
    assert 1 in _seqs(path, text)


def test_a_snippet_is_the_json_the_words_came_from(db_path: Path) -> None:
    raw = b'{"jsonrpc":"2.0", "method":"session/update",'
    raw += b'"params":{"t":"one\\ntwo Caf\\u00e9 bar ::"}}\n'
    _write(db_path, [(A2C, raw)])
    db = connect(db_path)
    (hit,) = search(db, SearchQuery("two cafe"))
    assert hit.snippet == (
        '{"jsonrpc":"2.0","method":"session/update","params":{"t":"one\\n\x02two Café\x03 bar ::"}}'
    )
    (punctuation,) = search(db, SearchQuery("::"))  # no word: looked for as a substring
    assert punctuation.snippet.endswith('"t":"one\\ntwo Café bar \x02::\x03"}}')


def test_a_match_the_json_does_not_show_keeps_the_index_snippet(db_path: Path) -> None:
    raw = b'{"jsonrpc":"2.0","method":"x","params":{"t":"' + b"a " * 40_000 + b'needle"}}\n'
    _write(db_path, [(A2C, raw)])
    (hit,) = search(connect(db_path), SearchQuery("needle"))
    assert "\x02needle\x03" in hit.snippet
    assert "jsonrpc" not in hit.snippet  # beyond what is looked at: the index's words


@pytest.mark.timeout(30)
def test_a_backtracking_pattern_takes_linear_time(db_path: Path) -> None:
    """RE2: a pattern that backtracks exponentially in Python's re matches in linear time."""
    write_recording(db_path, [
        (C2A, b'{"x":"' + b"a" * 40 + b'!"}\n'), (C2A, b'{"x":"' + b"a" * 200_000 + b'"}\n'),
    ])  # fmt: skip
    assert _seqs(db_path, "(a+)+$", regex=True) == []
    assert _seqs(db_path, '(a+)+"}$', regex=True) == [2]
    assert _seqs(db_path, "(x|x)*y", regex=True) == []


@pytest.mark.parametrize("pattern", [r"(a)\1", "(?=a)", "(?<=a)b", "a{1000}{1000}"])
def test_what_re2_cannot_match_in_linear_time_is_refused(db_path: Path, pattern: str) -> None:
    write_recording(db_path, [(C2A, b'{"x":"aab"}\n')])
    with pytest.raises(BadPattern, match="RE2"):
        _seqs(db_path, pattern, regex=True)
