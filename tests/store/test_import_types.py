"""Import checks every value's type: what it takes, every reader can read afterwards.

Before, ``"mono_ns": "soon"`` or ``"started_ns": "x"`` imported and crashed show, ls, the
exports, redact and replay later; a number past 64 bits ended the import with a traceback.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.inspect.export import export
from acp_proxy.store import readers as store_read
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording
from tests.support.processes import run_to_end


@pytest.fixture
def lines(db_path: Path) -> list[dict[str, Any]]:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    path = db_path.with_suffix(".jsonl")
    with path.open("wb") as out:
        export(store_read.open_for_reading(db_path), 1, "jsonl", out)
    return [json.loads(x) for x in path.read_text().splitlines()]


def _spoil(lines: list[dict[str, Any]], where: str, column: str, value: Any) -> str:
    spoiled = [dict(x) for x in lines]
    if where == "connection":
        spoiled[0] = {**spoiled[0], "connection": {**spoiled[0]["connection"], column: value}}
    else:
        spoiled[3] = {**spoiled[3], column: value}
    # json.dumps writes integers of any size, as a hand-edited or foreign file may hold them.
    return "".join(json.dumps(x) + "\n" for x in spoiled)


SPOILED = [
    ("frame", "mono_ns", "soon", "mono_ns is \"soon\", not an integer of 64 bits"),
    ("frame", "seq", 2**70, "seq is 1.1805916207174113e+21, not an integer of 64 bits"),
    ("frame", "seq", 2**64 - 1, "seq is 18446744073709551615, not an integer of 64 bits"),
    ("frame", "size", True, "size is true, not an integer of 64 bits"),
    ("frame", "kind", None, "kind is null"),
    ("frame", "method", 7, "method is 7, not text"),
    ("frame", "rpc_id", {"a": 1}, 'rpc_id is {"a":1}, not a string or a number'),
    ("connection", "started_ns", "x", "started_ns is \"x\", not an integer of 64 bits"),
    ("connection", "argv", "x", "argv is not JSON text"),
    ("connection", "argv", '{"a": 1}', "argv is not a JSON list of strings"),
    ("connection", "agent_info", "{nope", "agent_info is not JSON text"),
]  # fmt: skip


@pytest.mark.parametrize(("where", "column", "value", "message"), SPOILED)
def test_a_value_that_does_not_fit_its_column_is_refused(
    lines: list[dict[str, Any]], tmp_path: Path, where: str, column: str, value: Any, message: str
) -> None:
    path = tmp_path / "spoiled.jsonl"
    path.write_text(_spoil(lines, where, column, value))
    target = tmp_path / "target.sqlite"
    for args in (["import", str(path)], ["show", str(path)]):
        done = run_to_end(
            [sys.executable, "-m", "acp_proxy", *args, "--db", str(target)], timeout=30
        )
        assert (done.returncode, done.stdout) == (2, ""), (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1
        line = 1 if where == "connection" else 4
        assert f"line {line}: " in done.stderr, done.stderr
        assert message in done.stderr, done.stderr
    # Nothing was imported: the database holds no connection (it was created empty).
    assert sqlite3.connect(target).execute("SELECT count(*) FROM connection").fetchone() == (0,)


MEANINGLESS = [
    ("frame", "direction", "up", 'direction is "up", not c2a, a2c or stderr'),
    ("frame", "kind", "weird", 'kind is "weird", not a frame kind'),
    ("frame", "size", -5, "size is -5, less than 0"),
    ("frame", "size", 3, "size is 3, less than the"),
    ("frame", "seq", 0, "seq is 0, less than 1"),
    ("frame", "offset", -1, "offset is -1, less than 0"),
    ("frame", "bad_json", 2, "bad_json is 2, not 0 or 1"),
    ("frame", "raw", '{"a":1}\n{"b":2}\n', "raw holds more than one line"),
    ("header", "version", True, "export format version true is not supported"),
    ("header", "version", 1.0, "export format version 1.0 is not supported"),
]  # fmt: skip


@pytest.mark.parametrize(("where", "column", "value", "message"), MEANINGLESS)
def test_a_value_that_fits_its_column_but_means_nothing_is_refused(
    lines: list[dict[str, Any]], tmp_path: Path, where: str, column: str, value: Any, message: str
) -> None:
    from acp_proxy.store.importer import ImportRefused, import_jsonl

    spoiled = [dict(x) for x in lines]
    if where == "header":
        spoiled[0] = {**spoiled[0], column: value}
    else:
        spoiled[3] = {**spoiled[3], column: value}
    target = tmp_path / "target.sqlite"
    with pytest.raises(ImportRefused) as refused:
        import_jsonl(target, [json.dumps(x).encode() + b"\n" for x in spoiled])
    assert message in str(refused.value)
    assert sqlite3.connect(target).execute("SELECT count(*) FROM connection").fetchone() == (0,)
