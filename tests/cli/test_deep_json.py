"""JSON nested without limit never crashes a reader and never hides a secret.

Valid frames nested 300, 500, 1,000 and 5,000 levels deep (a token inside) are read by every
command that parses frames: they answer (exit 0, no traceback), a frame too deep to walk is
shown as its text, and every redacted output holds a placeholder, never the token.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.cli import run
from tests.support.helpers import C2A, line, observe_all

TOKEN = "ghp_" + "Zq8Lm2Xv7Np4Rt6Wy1Bc3Df5Gh9Jk0Ls2Mn4P"[:36]
DEPTHS = [300, 500, 1000, 5000]


def deep_frame(levels: int, inner: str) -> bytes:
    nested = "[" * levels + json.dumps(inner) + "]" * levels
    return f'{{"jsonrpc":"2.0","method":"x/deep","params":{{"v":{nested}}}}}\n'.encode()


def _record(db_path: Path, label: str, exchange: list[tuple[object, bytes]]) -> None:
    observer, records = observe_all(exchange)  # type: ignore[arg-type]
    db = connect(db_path)
    writer = RecordingWriter.start(
        db, NewConnection(["agent"], "/", "test", 1, label=label, started_ns=10**18)
    )
    writer.append(records, facts=observer.facts())
    writer.update(status="exited", exit_code=0)
    db.close()


@pytest.fixture(scope="module")
def deep_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db_path = tmp_path_factory.mktemp("deep") / "recordings.sqlite"
    for levels in DEPTHS:
        _record(db_path, f"d{levels}", [
            (C2A, line({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": 1}})),
            (C2A, deep_frame(levels, f"key {TOKEN}")),
        ])  # fmt: skip
    return db_path


@pytest.mark.parametrize("levels", DEPTHS)
def test_a_deep_frame_is_stored_as_the_message_it_is(deep_db: Path, levels: int) -> None:
    shown = [json.loads(x) for x in run(deep_db, "show", f"d{levels}", "--json").stdout.split("\n")
             if x]  # fmt: skip
    assert shown[1]["kind"] == "notification"
    assert shown[1]["method"] == "x/deep"
    assert shown[1]["flags"] == []  # valid JSON, valid JSON-RPC
    assert shown[1]["text"] == deep_frame(levels, f"key {TOKEN}").decode()  # shown raw, exact


@pytest.mark.parametrize("levels", DEPTHS)
@pytest.mark.parametrize(
    "command",
    [["show", "--pretty"], ["show"], ["tail", "-n", "5"], ["tail", "-n", "5", "--json"],
     ["export", "--format", "html"], ["export", "--format", "markdown"], ["stats"],
     ["check", "--ignore", "ACP000"], ["check"], ["search", "key"]],
    ids=" ".join,
)  # fmt: skip
def test_every_reader_answers(deep_db: Path, levels: int, command: list[str]) -> None:
    ref = [] if command[0] == "search" else [f"d{levels}"]
    result = run(deep_db, *command, *ref, code=1 if command[0] == "check" else 0)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("levels", DEPTHS)
def test_redacted_outputs_answer_and_hold_no_secret(
    deep_db: Path, levels: int, tmp_path: Path
) -> None:
    for command in (["redact", f"d{levels}"],
                    ["export", f"d{levels}", "--redact", "--format", "jsonl"]):  # fmt: skip
        out = run(deep_db, *command).stdout
        assert TOKEN not in out
        assert "[redacted:github-token:1]" in out
    bundle = tmp_path / "deep.acpbundle"
    # --force: as root, the schema cache path (/root/...) looks like the user name to verify.py.
    run(deep_db, "bundle", f"d{levels}", "-o", str(bundle), "--force")
    with zipfile.ZipFile(bundle) as opened:
        for name in opened.namelist():
            assert TOKEN.encode() not in opened.read(name), name
    assert "clean" in run(deep_db, "redact", "--verify", str(bundle)).stdout


def test_deep_recordings_diff(deep_db: Path) -> None:
    result = run(deep_db, "diff", "d300", "d5000", code=1)
    assert "Traceback" not in result.output
    assert run(deep_db, "diff", "d5000", "d5000").exit_code == 0
