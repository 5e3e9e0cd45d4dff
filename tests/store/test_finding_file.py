"""The checker's findings file (store/finding_file.py): what the writer adds, the reader reads
in the order found, by range of frames and by frame; nothing before the writer has said so."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.store.finding_file import FindingReader, FindingWriter


def finding(seq: int | None, rule: str, message: str) -> dict[str, Any]:
    return {"seq": seq, "direction": "a2c", "rule": rule, "severity": "error",
            "message": message, "summary": f"{rule} summary", "fix": f"{rule} fix",
            "source": None}  # fmt: skip


def shown(found: list[tuple[str, bytes]]) -> list[tuple[str, Any, str]]:
    return [
        (rule, orjson.loads(body)["seq"], orjson.loads(body)["message"]) for rule, body in found
    ]


def test_read_in_order_by_range_and_by_frame(tmp_path: Path) -> None:
    path = tmp_path / "findings.sqlite"
    writer = FindingWriter(path)
    writer.add([finding(5, "A", "one"), finding(None, "B", "no frame"), finding(2, "A", "two")])
    writer.add([])
    writer.add([finding(5, "B", "three"), finding(9, "A", "four")])
    reader = FindingReader(path)
    reader.writer_said()
    assert shown(reader.page(0, 10)) == [
        ("A", 5, "one"), ("B", None, "no frame"), ("A", 2, "two"), ("B", 5, "three"),
        ("A", 9, "four"),
    ]  # fmt: skip
    assert shown(reader.page(1, 2)) == [("B", None, "no frame"), ("A", 2, "two")]
    # By frame, then in the order found; a finding of no frame is in no range.
    assert shown(reader.between(2, 5, 10)) == [("A", 2, "two"), ("A", 5, "one"), ("B", 5, "three")]
    assert shown(reader.between(2, 5, 2)) == [("A", 2, "two"), ("A", 5, "one")]
    assert reader.between(10, 20, 10) == []
    # Each rule's words once, joined to a frame's own findings.
    assert {k: orjson.loads(v) for k, v in reader.rules(["A", "A", "C"]).items()} == {
        "A": {"summary": "A summary", "fix": "A fix", "source": None}
    }
    assert reader.of_frame(5) == [
        {**finding(5, "A", "one")},
        {**finding(5, "B", "three")},
    ]
    assert reader.of_frame(3) == []
    # The page's JSON carries the finding's fields only, not the rule's words.
    assert set(orjson.loads(reader.page(0, 1)[0][1])) == {
        "seq", "direction", "rule", "severity", "message"
    }  # fmt: skip
    reader.close()
    writer.close()


def test_nothing_is_read_before_the_writer_has_said_so(tmp_path: Path) -> None:
    path = tmp_path / "findings.sqlite"
    sqlite3.connect(path).close()  # the file there, its tables not yet (the writer starting)
    reader = FindingReader(path)
    assert reader.page(0, 10) == []
    assert reader.between(0, 100, 10) == []
    assert reader.of_frame(1) == []
    assert reader.rules(["A"]) == {}
    writer = FindingWriter(path)
    writer.add([finding(1, "A", "one")])
    assert reader.page(0, 10) == []  # not said yet
    reader.writer_said()
    assert shown(reader.page(0, 10)) == [("A", 1, "one")]
    reader.close()
    writer.close()


def test_read_after_the_writer_has_gone(tmp_path: Path) -> None:
    """A short check may end before the page first asks: the file is read, read-only, once
    its writer has closed it."""
    path = tmp_path / "findings.sqlite"
    writer = FindingWriter(path)
    writer.add([finding(1, "A", "one"), finding(2, "B", "two")])
    writer.close()
    reader = FindingReader(path)
    reader.writer_said()
    assert shown(reader.between(1, 2, 10)) == [("A", 1, "one"), ("B", 2, "two")]
    assert reader.of_frame(2)[0]["fix"] == "B fix"
    reader.close()
