"""One REF opener: every command says the same thing, in one line, with exit status 2.

Every command that takes a REF is given one that names nothing, a file that does not exist, a
folder, and databases that are no recording (an empty file, another program's SQLite, a text
file, a damaged one): each exits 2 with one line on stderr and nothing on stdout. A label two
connections share names the newest, and the command says so; ``diff`` takes recording files.
"""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import write_recording
from tests.support.processes import acp_proxy as run_acp_proxy

REF_COMMANDS = [
    ["show", "{ref}"], ["tail", "{ref}"], ["tail", "-f", "{ref}"], ["stats", "{ref}"],
    ["export", "{ref}"], ["export", "{ref}", "--redact"], ["redact", "{ref}"],
    ["bundle", "{ref}", "-o", "{tmp}/out.acpbundle"], ["check", "{ref}"],
    ["check", "{ref}", "--ignore", "ACP000"], ["diff", "{ref}", "1"], ["diff", "1", "{ref}"],
    ["replay", "{ref}"], ["replay", "--to-agent", "{ref}", "--", "true"],
    ["replay", "--go-live", "{ref}", "--", "true"],
]  # fmt: skip
DATABASE_COMMANDS = [
    ["ls"], ["show"], ["tail"], ["tail", "-f"], ["stats"], ["export"], ["redact"],
    ["bundle", "-o", "{tmp}/out.acpbundle"], ["check", "--ignore", "ACP000"],
    ["check", "--all", "--ignore", "ACP000"], ["diff", "1", "1"], ["replay", "1"],
]  # fmt: skip


def acp_proxy(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return run_acp_proxy(*args, timeout=30, cwd=cwd)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert (done.returncode, done.stdout) == (2, ""), (done.returncode, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("acp-proxy: "), done.stderr
    return done.stderr


@pytest.fixture
def recorded(db_path: Path) -> Path:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    return db_path


def _args(command: list[str], ref: str, tmp: Path, db: Path) -> list[str]:
    """The command with ``--db`` right after its name (never after an agent's ``--``)."""
    name, *rest = command
    return [name, "--db", str(db), *(part.format(ref=ref, tmp=tmp) for part in rest)]


@pytest.mark.parametrize("command", REF_COMMANDS, ids=" ".join)
def test_every_command_given_an_unknown_ref_exits_2_with_one_line(
    recorded: Path, tmp_path: Path, command: list[str]
) -> None:
    said = one_line(acp_proxy(*_args(command, "nope", tmp_path, recorded)))
    assert said.startswith("acp-proxy: no recording matches 'nope' in ")
    assert "acp-proxy ls" in said


@pytest.mark.parametrize("command", REF_COMMANDS, ids=" ".join)
def test_every_command_says_a_missing_file_does_not_exist(
    recorded: Path, tmp_path: Path, command: list[str]
) -> None:
    said = one_line(acp_proxy(*_args(command, "./missing.jsonl", tmp_path, recorded), cwd=tmp_path))
    assert said == "acp-proxy: ./missing.jsonl: no such file\n"


def test_a_folder_is_not_a_recording_file(recorded: Path, tmp_path: Path) -> None:
    (tmp_path / "exports").mkdir()
    said = one_line(acp_proxy("show", "exports/", "--db", str(recorded), cwd=tmp_path))
    assert said == "acp-proxy: exports/: is a folder, not a recording file\n"


def test_a_file_that_exists_is_not_said_to_be_missing(recorded: Path, tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# recordings\n")
    said = one_line(acp_proxy("show", "./README.md", "--db", str(recorded), cwd=tmp_path))
    assert said.startswith("acp-proxy: ./README.md: not a recording file (recording files are ")
    assert "*.jsonl" in said


def test_a_label_written_like_a_path_still_names_its_recording(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION, label="team/v1")
    done = acp_proxy("show", "team/v1", "--db", str(db_path))
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == len(V1_CONVERSATION)


def test_a_file_that_is_no_export_is_refused(recorded: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"hello": 1}\n')
    said = one_line(acp_proxy("show", str(notes), "--db", str(recorded)))
    assert said.startswith(f"acp-proxy: {notes}: not a recording file: not an acp-proxy export")


def _damaged(tmp_path: Path) -> Path:
    path = tmp_path / "damaged.sqlite"
    write_recording(path, V1_CONVERSATION * 60, label="v1")
    data = path.read_bytes()
    page = 4096
    # Keep the header page (the schema) and scribble over every page after it.
    path.write_bytes(data[:page] + bytes(b % 251 for b in range(len(data) - page)))
    return path


def _undecodable(tmp_path: Path) -> Path:
    path = tmp_path / "undecodable.sqlite"
    write_recording(path, V1_CONVERSATION, label="v1")
    db = sqlite3.connect(path)
    db.execute("UPDATE connection SET label = CAST(x'ff1b5b324a' AS TEXT)")
    db.commit()
    db.close()
    return path


def _not_ours(tmp_path: Path) -> Path:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE notes (text)")
    db.commit()
    db.close()
    return path


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    return path


def _text(tmp_path: Path) -> Path:
    path = tmp_path / "notes.sqlite"
    path.write_text("some notes, not a database\n" * 100)
    return path


@pytest.mark.parametrize("make", [_empty, _not_ours, _text, _damaged, _undecodable])
@pytest.mark.parametrize("command", DATABASE_COMMANDS, ids=" ".join)
def test_a_database_that_is_no_recording_is_one_line(
    tmp_path: Path, command: list[str], make: object
) -> None:
    assert callable(make)
    database = make(tmp_path)
    done = acp_proxy(*_args(command, "", tmp_path, database))
    if make is _undecodable and command[0] in ("show", "tail", "export", "redact", "replay"):
        # Frames are still readable; only a reader of the label meets the damage.
        assert done.returncode in (0, 2), done.stderr
        assert "Traceback" not in done.stderr
        return
    said = one_line(done)
    assert "Traceback" not in said
    if make in (_empty, _not_ours):
        assert said.startswith(f"acp-proxy: {database} is not an acp-proxy recording database")


def test_a_shared_label_names_the_newest_and_says_how_to_choose(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION, label="demo")
    write_recording(db_path, V2_CONVERSATION, label="other")
    write_recording(db_path, V2_CONVERSATION, label="demo")
    done = acp_proxy("show", "demo", "--db", str(db_path))
    assert done.returncode == 0
    assert done.stderr == (
        "acp-proxy: label 'demo' names 2 connections (1 and 3): this is the newest, 3; give a "
        "connection id to choose another (acp-proxy ls)\n"
    )
    assert len(done.stdout.splitlines()) == len(V2_CONVERSATION)
    assert acp_proxy("show", "1", "--db", str(db_path)).stderr == ""


def test_diff_accepts_bundles_and_jsonl_exports(recorded: Path, tmp_path: Path) -> None:
    exported = tmp_path / "v1.jsonl"
    assert acp_proxy("export", "v1", "-o", str(exported), "--db", str(recorded)).returncode == 0
    bundle = tmp_path / "v1.acpbundle"
    made = acp_proxy("bundle", "v1", "-o", str(bundle), "--db", str(recorded))
    assert made.returncode == 0, made.stderr
    # The bundle is redacted: the recorded cwd (/home/u/p) names a user.
    cwd = ["--ignore", "$.params.cwd"]
    for a, b in [(str(exported), "v1"), ("v1", str(bundle)), (str(bundle), str(exported))]:
        done = acp_proxy("diff", a, b, *cwd, "--db", str(recorded))
        assert (done.returncode, done.stderr) == (0, ""), (a, b, done.stdout, done.stderr)
        assert done.stdout.startswith("same: ")
    write_recording(recorded, V2_CONVERSATION, label="v2")
    differ = acp_proxy("diff", str(exported), "v2", "--db", str(recorded))
    assert differ.returncode == 1
    assert differ.stdout.startswith("differ: ")


def test_check_takes_files_and_database_refs_in_the_order_given(
    recorded: Path, tmp_path: Path
) -> None:
    exported = tmp_path / "v1.jsonl"
    acp_proxy("export", "v1", "-o", str(exported), "--db", str(recorded))
    done = acp_proxy("check", "v1", str(exported), "--ignore", "ACP000", "--format", "json",
                     "--db", str(recorded))  # fmt: skip
    import json

    report = json.loads(done.stdout)
    assert [c["label"] for c in report["connections"]] == ["v1", "v1"]
    assert report["summary"]["connections"] == 2


@pytest.mark.parametrize(
    "args",
    [["show", "--from", "99999999999999999999"], ["show", "-n", "99999999999999999999"],
     ["ls", "-n", "99999999999999999999"], ["tail", "-n", "99999999999999999999"],
     ["replay", "v1", "--timeout", "1e400"], ["replay", "v1", "--max-gap", "1e300"],
     ["replay", "v1", "--timing", "x1e-300"]],
    ids=" ".join,
)  # fmt: skip
def test_numbers_past_64_bits_in_options_are_usage_errors(recorded: Path, args: list[str]) -> None:
    done = acp_proxy(*args, "--db", str(recorded))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "OverflowError" not in done.stderr
