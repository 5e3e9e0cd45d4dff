"""The sample recordings in recordings/: each imports, checks as expected and replays, and the
script that made them makes them again.

The SDK sample is also replayed to the official Python SDK's demo client, the real peer it was
recorded from: it must see the conversation again and replay must find no divergence.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from acp_proxy.store.importer import import_jsonl
from tests.support.processes import acp_proxy as run_acp_proxy
from tests.support.processes import run_to_end

REPO = Path(__file__).resolve().parents[2]
RECORDINGS = REPO / "recordings"
SAMPLES = ("sdk-permission-read", "v2-draft", "edge-cases")
# What check must say of each: the rule and the start of the frame of every finding (seq
# numbers move with how the agent's stderr interleaved when the sample was made).
FINDINGS: dict[str, list[tuple[str, bytes]]] = {
    "sdk-permission-read": [],
    "v2-draft": [],
    "edge-cases": [
        ("ACP001", b"Loading model weights"),  # not JSON
        ("ACP001", b'{"jsonrpc":"2.0","method":"session/update"'),  # not UTF-8 (caf\xe9)
        ("ACP001", b'{"jsonrpc":"2.0","method":"session/update"'),  # no final newline
    ],
}
SAMPLE_DIR = Path("/tmp/acp-proxy-sample")  # where regenerate.py ran the demo


def _cli(*args: str, stdin: bytes = b"", cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    return run_acp_proxy(*args, input=stdin, text=False, timeout=45, cwd=cwd)


def _frames(name: str) -> list[dict[str, object]]:
    lines = (RECORDINGS / f"{name}.jsonl").read_bytes().splitlines()
    return [json.loads(line) for line in lines[1:]]


def _raw(frame: dict[str, object]) -> bytes:
    if "raw_base64" in frame:
        import base64

        return base64.b64decode(str(frame["raw_base64"]))
    return str(frame["raw"]).encode()


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_imports_with_its_exact_bytes(name: str, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    with (RECORDINGS / f"{name}.jsonl").open("rb") as handle:
        [connection_id] = import_jsonl(db, handle)
    con = sqlite3.connect(db)
    query = "SELECT raw FROM frame WHERE connection_id = ? ORDER BY seq"
    stored = [bytes(r[0]) for r in con.execute(query, (connection_id,))]
    label = con.execute("SELECT label FROM connection").fetchone()[0]
    con.close()
    assert stored == [_raw(f) for f in _frames(name)]
    assert label == name


def test_the_samples_hold_what_they_promise() -> None:
    sdk = _frames("sdk-permission-read")
    methods = {f.get("method") for f in sdk}
    assert {"session/request_permission", "fs/read_text_file", "session/prompt"} <= methods
    v2 = _frames("v2-draft")
    kinds = {f.get("update_kind") for f in v2}
    assert {"state_update", "notice", "compaction_update", "compaction_summary_chunk"} <= kinds
    edge = _frames("edge-cases")
    assert any(f["bad_json"] and not f["bad_utf8"] for f in edge)
    assert any(f["bad_utf8"] for f in edge)
    assert max(int(str(f["size"])) for f in edge) > 1024 * 1024
    assert edge[-1]["no_newline"] == 1
    assert any(f["direction"] == "stderr" for f in edge)


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_checks_as_expected(name: str, tmp_path: Path) -> None:
    done = _cli("check", "--db", str(tmp_path / "none.sqlite"), "--format", "json",
                str(RECORDINGS / f"{name}.jsonl"))  # fmt: skip
    expected = FINDINGS[name]
    assert done.returncode == (1 if expected else 0), done.stderr
    frames = {f["seq"]: _raw(f) for f in _frames(name)}
    found = json.loads(done.stdout)["findings"]
    assert [f["rule"] for f in found] == [rule for rule, _ in expected]
    for finding, (_, start) in zip(found, expected, strict=True):
        assert frames[finding["seq"]].startswith(start), finding


@pytest.mark.parametrize("name", SAMPLES)
def test_each_sample_replays_to_a_client_that_says_the_same(name: str, tmp_path: Path) -> None:
    frames = _frames(name)
    client = b"".join(_raw(f) for f in frames if f["direction"] == "c2a")
    agent = b"".join(
        _raw(f) for f in frames if f["direction"] == "a2c" and f.get("update_kind") != "notice"
    )
    done = _cli("replay", "--db", str(tmp_path / "none.sqlite"),
                str(RECORDINGS / f"{name}.jsonl"), stdin=client)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == agent
    assert b"No divergence." in done.stderr


@pytest.mark.peers
def test_the_sdk_sample_replays_to_the_official_sdk_client() -> None:
    SAMPLE_DIR.mkdir(exist_ok=True)
    notes = SAMPLE_DIR / "notes.md"
    from recordings.regenerate import NOTES  # the file the recorded agent read

    notes.write_text(NOTES)
    sample = RECORDINGS / "sdk-permission-read.jsonl"
    replay = [sys.executable, "-m", "acp_proxy", "replay", str(sample)]
    done = run_to_end(
        [sys.executable, "-m", "acp_proxy.demo.client", "--file", str(notes), "--", *replay],
        text=False,
        timeout=45,
        cwd=SAMPLE_DIR,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert b"permission: Read notes.md: allowed" in done.stdout
    assert b"fs: read /tmp/acp-proxy-sample/notes.md (4 lines)" in done.stdout
    assert b"No divergence." in done.stderr


@pytest.mark.peers
@pytest.mark.slow
def test_regenerate_makes_the_same_conversations_again(tmp_path: Path) -> None:
    done = run_to_end(
        [sys.executable, str(RECORDINGS / "regenerate.py"), "--out", str(tmp_path)],
        text=False,
        timeout=55,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    db = tmp_path / "both.sqlite"
    for name in SAMPLES:
        committed, fresh = RECORDINGS / f"{name}.jsonl", tmp_path / f"{name}.jsonl"
        with committed.open("rb") as old_file, fresh.open("rb") as new_file:
            [old] = import_jsonl(db, old_file)
            [new] = import_jsonl(db, new_file)
        same = _cli("diff", "--db", str(db), str(old), str(new))
        assert same.returncode == 0, (name, same.stdout.decode())
