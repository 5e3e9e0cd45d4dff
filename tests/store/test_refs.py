"""The REF opener (store/refs.py) in-process: what each form of REF opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_proxy.errors import BadReference, UnknownRecording, UnreadableRecording
from acp_proxy.inspect.export import export
from acp_proxy.store import readers as store_read
from acp_proxy.store.refs import open_ref, resolve_ref
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import write_recording


@pytest.fixture
def two(db_path: Path) -> Path:
    write_recording(db_path, V1_CONVERSATION, label="same")
    write_recording(db_path, V2_CONVERSATION, label="same")
    return db_path


def test_database_refs(two: Path) -> None:
    notes: list[str] = []
    opened = open_ref("same", two, note=notes.append)
    assert (opened.connection_id, opened.from_file, opened.path) == (2, False, two)
    assert notes == [
        "label 'same' names 2 connections (1 and 2): this is the newest, 2; give a connection "
        "id to choose another (acp-proxy ls)"
    ]
    notes.clear()
    assert open_ref("1", two, note=notes.append).connection_id == 1
    assert open_ref(None, two, note=notes.append).connection_id == 2
    uid = store_read.connection(opened.db, 1).uid
    assert open_ref(uid, two, note=notes.append).connection_id == 1
    assert notes == []


def test_a_session_ref_narrows_only_when_asked(two: Path) -> None:
    narrowed = open_ref("sess_1", two, sessions=True).target
    assert (narrowed.connection_id, narrowed.session_id) == (1, "sess_1")
    assert open_ref("sess_1", two).target.session_id is None


def test_unknown_refs(two: Path, tmp_path: Path) -> None:
    with pytest.raises(UnknownRecording, match="no recording matches 'nope' in "):
        open_ref("nope", two)
    with pytest.raises(UnknownRecording, match=r"matches .9{30}."):  # no id SQLite can hold
        resolve_ref(open_ref(None, two).db, "9" * 30)
    with pytest.raises(UnknownRecording, match="no recording database at"):
        open_ref("last", tmp_path / "none.sqlite")
    with pytest.raises(UnknownRecording, match=r"missing\.jsonl: no such file"):
        open_ref("missing.jsonl", tmp_path / "none.sqlite")
    with pytest.raises(UnreadableRecording, match="is a folder"):
        open_ref(str(tmp_path) + "/", two)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(BadReference, match="is not an acp-proxy recording database"):
        open_ref(None, empty)


def test_a_file_of_several_episodes(two: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "two.jsonl"
    db = store_read.open_for_reading(two)
    with cassette.open("wb") as out:
        export(db, 1, "jsonl", out)
        export(db, 2, "jsonl", out)
    notes: list[str] = []
    every = open_ref(str(cassette), tmp_path / "unused.sqlite", episodes=True, note=notes.append)
    assert every.from_file
    assert len(every.targets) == 2
    assert notes == []
    assert [t.protocol_version for t in every.targets] == [1, 2]
    first = open_ref(str(cassette), tmp_path / "unused.sqlite", note=notes.append)
    assert len(first.targets) == 1
    assert first.target.protocol_version == 1
    assert notes == [f"{cassette} holds 2 episodes; this is episode 1 (import the file to reach "
                     "the others)"]  # fmt: skip
    assert not (tmp_path / "unused.sqlite").exists()
