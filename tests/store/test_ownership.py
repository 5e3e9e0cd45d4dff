"""One rule for every command that opens a database: only a new file or a recording database
is ever written, and a file that is not one (or holds nonsense) is one line and exit 2.

Before, search, prune, delete, import and mcp wrote 20 schema objects into another program's
SQLite file and switched it to WAL; a tampered column or an odd old schema gave tracebacks;
delete, prune and import on a damaged or newer file exited 1.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from acp_proxy.inspect.export import export
from acp_proxy.store import readers as store_read
from tests.support.cli import run
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording

COMMANDS = [
    ["ls"], ["show"], ["search", "hello"], ["prune", "--older-than", "1d"], ["delete", "1"],
    ["stats"], ["export", "--format", "jsonl", "-o", "/dev/null"],
]  # fmt: skip


@pytest.fixture
def export_file(tmp_path: Path) -> Path:
    source = tmp_path / "source.sqlite"
    write_recording(source, V1_CONVERSATION, label="v1")
    path = tmp_path / "v1.jsonl"
    with path.open("wb") as out:
        export(store_read.open_for_reading(source), 1, "jsonl", out)
    return path


def _refused(path: Path, args: list[str], capfd: pytest.CaptureFixture[str], *words: str) -> None:
    capfd.readouterr()
    run(path, *args, code=2)
    said = capfd.readouterr().err
    assert said.count("\n") == 1, (args, said)
    assert "Traceback" not in said
    assert all(word in said for word in words), (args, said)


def _foreign(path: Path) -> str:
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT);"
        "INSERT INTO urls (url) VALUES ('https://example.org');"
    )
    db.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("args", [*COMMANDS, ["import", "EXPORT"]])
def test_another_programs_sqlite_file_is_refused_unchanged(
    tmp_path: Path, export_file: Path, args: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "history.sqlite"
    digest = _foreign(history)
    args = [str(export_file) if a == "EXPORT" else a for a in args]
    _refused(history, args, capfd, "is not an acp-proxy recording database")
    assert hashlib.sha256(history.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.glob("history.sqlite*")) == ["history.sqlite"]
    db = sqlite3.connect(history)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert db.execute("SELECT count(*) FROM sqlite_master").fetchone() == (1,)


@pytest.mark.parametrize("args", COMMANDS)
def test_a_tampered_column_is_one_line_naming_it(
    db_path: Path, args: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    write_recording(db_path, V1_CONVERSATION)
    db = sqlite3.connect(db_path)
    db.execute("UPDATE connection SET started_ns = 'yesterday'")
    db.commit()
    db.close()
    _refused(db_path, args, capfd, "connection 1 holds started_ns = 'yesterday', not integer")


@pytest.mark.parametrize("args", COMMANDS)
def test_an_old_format_with_a_text_id_is_not_a_recording(
    db_path: Path, args: list[str], capfd: pytest.CaptureFixture[str]
) -> None:
    db = sqlite3.connect(db_path)
    db.executescript(
        "CREATE TABLE connection (id TEXT, uid TEXT, label TEXT, status TEXT, started_ns INT);"
        "INSERT INTO connection VALUES ('abc', 'u', 'x', 'exited', 1);"
        "CREATE TABLE frame (id INTEGER PRIMARY KEY, connection_id TEXT, seq INT, raw BLOB);"
        "PRAGMA user_version = 3;"
    )
    db.close()
    _refused(db_path, args, capfd, "is not an acp-proxy recording database")


@pytest.mark.parametrize("damage", ["not sqlite", "truncated", "newer"])
@pytest.mark.parametrize("args", [["delete", "1"], ["prune", "--older-than", "1d"], ["import"]])
def test_writers_refuse_a_damaged_or_newer_file_with_exit_2(
    db_path: Path, export_file: Path, damage: str, args: list[str],
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    write_recording(db_path, V1_CONVERSATION)
    if damage == "not sqlite":
        db_path.write_bytes(b"\x13\x37" * 1500)
    elif damage == "truncated":
        db_path.write_bytes(db_path.read_bytes()[:5000])
    else:
        db = sqlite3.connect(db_path)
        db.execute("PRAGMA user_version = 99")
        db.close()
    if args == ["import"]:
        args = ["import", str(export_file)]
    _refused(db_path, args, capfd, str(db_path))
