"""A frame column of the wrong type (or NULL) in a database handed to us: every reader says so
in one line and exits 2, or gives exactly what it gives without the change (a column it does
not read); never a traceback, never output built on the wrong value.

Before, ``show`` printed a text ``mono_ns`` as a time, ``ls`` counted a blob ``kind`` as no
prompt, and ``replay``, ``check`` and ``export`` raised TypeError tracebacks.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import tamper_frame, write_recording

# (seq, column, SQL value): the prompt request, the "Hello" update (replay sends it verbatim),
# a tool call update, the session/new response, the initialize response, the session/new
# request, a thought chunk (verbatim too) whose update kind is a blob.
TAMPERINGS = [
    (6, "kind", "X'00'"),
    (6, "mono_ns", "'soon'"),
    (11, "raw", "CAST(raw AS TEXT)"),
    (11, "seq", "'eleven'"),
    (8, "direction", "NULL"),
    (5, "request_seq", "'four'"),
    (2, "session_id", "X'73'"),
    (6, "method", "X'00'"),
    (4, "raw", "NULL"),
    (7, "update_kind", "X'6E6F74696365'"),
]
# Readers of every column of every frame: they must refuse each tampering.
WHOLE = [
    ["show", "1"], ["show", "1", "--json"], ["tail", "1", "-n", "100"], ["check", "1"],
    ["diff", "1", "1"], ["export", "1", "--format", "jsonl"],
    ["bundle", "1", "-o", "OUT"],
]  # fmt: skip
# Readers of some columns: they refuse, or answer exactly as they do on the untouched file.
SOME = [
    ["ls"], ["stats", "1"], ["stats", "1", "--json"], ["search", "Hello"],
    ["search", "--regex", "."], ["search", "@"], ["export", "1", "--format", "markdown"],
    ["export", "1", "--format", "html"], ["show", "1", "--raw"],
]  # fmt: skip


def _run(db_path: Path, args: list[str], capfd: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capfd.readouterr()
    args = [str(db_path.with_suffix(".acpbundle")) if a == "OUT" else a for a in args]
    result = CliRunner().invoke(cli, [*args, "--db", str(db_path)])
    said = capfd.readouterr().err + result.stderr  # our lines, and click's (a progress bar)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, said


def _refused(code: int, said: str, column: str, where: str) -> bool:
    return (
        code == 2
        and said.count("\n") == 1
        and f"holds {column} = " in said
        and where in said
        and "changed by something other than acp-proxy" in said
    )


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    path = tmp_path / "clean.sqlite"
    write_recording(path, V1_CONVERSATION)
    return path


def _tampered(clean: Path, tmp_path: Path, seq: int, column: str, value: str) -> Path:
    path = tmp_path / "tampered.sqlite"
    shutil.copy(clean, path)
    tamper_frame(path, seq, column, value)
    return path


def _where(seq: int, column: str) -> str:
    return "a frame" if column == "seq" else f"frame {seq}"


@pytest.mark.parametrize("args", WHOLE, ids=" ".join)
@pytest.mark.parametrize("tampering", TAMPERINGS, ids=lambda t: f"{t[1]}@{t[0]}")
def test_a_reader_of_whole_frames_refuses_a_wrong_column_in_one_line(
    clean: Path, tmp_path: Path, args: list[str], tampering: tuple[int, str, str],
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    seq, column, value = tampering
    path = _tampered(clean, tmp_path, seq, column, value)
    code, out, said = _run(path, args, capfd)
    assert _refused(code, said, column, _where(seq, column)), (code, out, said)
    assert str(path) in said


@pytest.mark.parametrize("args", SOME, ids=" ".join)
@pytest.mark.parametrize("tampering", TAMPERINGS, ids=lambda t: f"{t[1]}@{t[0]}")
def test_a_reader_of_some_columns_refuses_or_answers_as_without_the_change(
    clean: Path, tmp_path: Path, args: list[str], tampering: tuple[int, str, str],
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    seq, column, value = tampering
    expected = _run(clean, args, capfd)
    path = _tampered(clean, tmp_path, seq, column, value)
    code, out, said = _run(path, args, capfd)
    if not _refused(code, said, column, _where(seq, column)):
        assert "Traceback" not in said
        assert (code, out.replace(str(path), "DB"), said) == (
            expected[0], expected[1].replace(str(clean), "DB"), expected[2],
        )  # fmt: skip


@pytest.mark.parametrize("tampering", TAMPERINGS, ids=lambda t: f"{t[1]}@{t[0]}")
def test_replay_refuses_a_wrong_column_before_it_sends_a_byte(
    clean: Path, tmp_path: Path, tampering: tuple[int, str, str]
) -> None:
    seq, column, value = tampering
    path = _tampered(clean, tmp_path, seq, column, value)
    done = subprocess.run(
        [sys.executable, "-m", "acp_proxy", "replay", "--db", str(path), "1"],
        check=False, stdin=subprocess.DEVNULL, capture_output=True, timeout=60,
    )  # fmt: skip
    said = done.stderr.decode()
    assert done.stdout == b""
    assert _refused(done.returncode, said, column, _where(seq, column)), (done.returncode, said)
