"""Bundles that are not what they claim are refused in one line, and cost little to refuse.

A real bundle (``acp-proxy bundle``) is taken apart and put together wrong: a zip bomb, a
member twice, no manifest, another compression method, the encrypted flag, damaged deflate
data, a truncated file, something that is no zip at all. Every reader (``show``, ``import``,
``replay``, ``check``, ``redact --verify``) refuses each with exit status 2 and one line. And
a bundle made after a normal ``schemas fetch`` records the schemas' package and version, not
the folder they are in (which names the user).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.helpers import write_recording
from tests.support.processes import acp_proxy as run_acp_proxy
from tests.support.processes import run_to_end
from tests.support.schemas import installed_schemas

READERS = [
    ["show"], ["import"], ["replay"], ["check", "--ignore", "ACP000"], ["redact", "--verify"],
]  # fmt: skip


# Runs the command line in this interpreter and writes its own peak memory (KiB) to a file:
# VmHWM, the high-water mark of this program's memory (ru_maxrss would count the test's own,
# which a forked child inherits across exec on Linux).
MEASURED = (
    "import runpy, sys\n"
    "peak_file = sys.argv.pop(1)\n"
    "sys.argv[0] = 'acp-proxy'\n"
    "try:\n"
    "    runpy.run_module('acp_proxy', run_name='__main__')\n"
    "finally:\n"
    "    with open('/proc/self/status') as status, open(peak_file, 'w') as out:\n"
    "        out.write(next(l.split()[1] for l in status if l.startswith('VmHWM:')))\n"
)


def acp_proxy(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return run_acp_proxy(*args, env=env, cwd=cwd)


def measured(peak_file: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``acp_proxy(*args)``, its peak resident memory written to ``peak_file``."""
    return run_to_end(
        [sys.executable, "-c", MEASURED, str(peak_file), *args],
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def members(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("bundle")
    db = root / "rec.sqlite"
    write_recording(db, V1_CONVERSATION, label="v1")
    done = acp_proxy("bundle", "--db", str(db), "v1", "-o", str(root / "good.acpbundle"))
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(root / "good.acpbundle") as bundle:
        return {name: bundle.read(name) for name in bundle.namelist()}


def write_zip(
    path: Path, entries: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED
) -> Path:
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", compression=method) as bundle:
        warnings.simplefilter("ignore")  # zipfile warns of a duplicate name: that is the point
        for name, data in entries:
            bundle.writestr(name, data)
    return path


def patch_headers(path: Path, offset_local: int, offset_central: int, value: bytes) -> None:
    """Overwrite a field of every local and central directory header (zip bytes on disk)."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", offset_local), (b"PK\x01\x02", offset_central)):
        start = data.find(signature)
        while start >= 0:
            data[start + offset : start + offset + len(value)] = value
            start = data.find(signature, start + 4)
    path.write_bytes(bytes(data))


def refused_by_every_reader(path: Path, tmp_path: Path, *reason: str) -> list[int]:
    """Every reader refuses ``path`` in one line for one of ``reason``; their peaks (KiB)."""
    peaks = []
    for reader in READERS:
        args = [*reader, str(path)]
        if reader[0] != "redact":
            args += ["--db", str(tmp_path / "other.sqlite")]
        peak_file = tmp_path / "peak"
        done = measured(peak_file, *args)
        peaks.append(int(peak_file.read_text()))
        assert done.returncode == 2, (reader, done.stdout, done.stderr)
        assert done.stdout == "", reader
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("acp-proxy: "), done.stderr
        assert any(word in done.stderr for word in reason), (reader, done.stderr)
        assert "Traceback" not in done.stderr
    return peaks


def test_the_good_bundle_is_read_by_every_reader(members: dict[str, bytes], tmp_path: Path) -> None:
    good = write_zip(tmp_path / "good.acpbundle", list(members.items()))
    assert acp_proxy("show", str(good), "--db", str(tmp_path / "x.sqlite")).returncode == 0
    assert acp_proxy("redact", "--verify", str(good)).returncode == 0


def test_a_zip_bomb_is_refused_before_it_is_read(members: dict[str, bytes], tmp_path: Path) -> None:
    frames = b"x" * (96 << 20)  # one 96 MiB line, a few hundred KiB deflated
    bomb = write_zip(
        tmp_path / "bomb.acpbundle", [("manifest.json", members["manifest.json"]),
                                      ("frames.jsonl", frames)],
    )  # fmt: skip
    del frames
    assert bomb.stat().st_size < 1 << 20
    peaks = refused_by_every_reader(bomb, tmp_path, "zip bomb")
    assert max(peaks) < 150 << 10, f"a reader took {max(peaks)} KiB (each: {peaks})"


def test_a_member_twice_is_refused(members: dict[str, bytes], tmp_path: Path) -> None:
    twice = write_zip(
        tmp_path / "twice.acpbundle",
        [*members.items(), ("frames.jsonl", members["frames.jsonl"])],
    )
    refused_by_every_reader(twice, tmp_path, "frames.jsonl twice")


def test_a_bundle_without_a_manifest_is_refused(members: dict[str, bytes], tmp_path: Path) -> None:
    bare = write_zip(
        tmp_path / "bare.acpbundle", [(n, d) for n, d in members.items() if n != "manifest.json"]
    )
    refused_by_every_reader(bare, tmp_path, "no manifest.json")
    foreign = write_zip(
        tmp_path / "foreign.acpbundle",
        [("manifest.json", b'{"format": "something else"}'),
         ("frames.jsonl", members["frames.jsonl"])],
    )  # fmt: skip
    refused_by_every_reader(foreign, tmp_path, "not an acp-proxy bundle")


def test_a_zip_without_frames_is_refused(members: dict[str, bytes], tmp_path: Path) -> None:
    empty = write_zip(tmp_path / "empty.zip", [("manifest.json", members["manifest.json"])])
    refused_by_every_reader(empty, tmp_path, "no frames.jsonl")


def test_an_unknown_compression_method_is_refused(
    members: dict[str, bytes], tmp_path: Path
) -> None:
    odd = write_zip(tmp_path / "odd.acpbundle", list(members.items()), zipfile.ZIP_STORED)
    patch_headers(odd, 8, 10, (99).to_bytes(2, "little"))
    refused_by_every_reader(odd, tmp_path, "compression method 99")


def test_an_encrypted_member_is_refused(members: dict[str, bytes], tmp_path: Path) -> None:
    locked = write_zip(tmp_path / "locked.acpbundle", list(members.items()))
    patch_headers(locked, 6, 8, (1).to_bytes(2, "little"))
    refused_by_every_reader(locked, tmp_path, "encrypted")


def test_damaged_deflate_data_is_refused(members: dict[str, bytes], tmp_path: Path) -> None:
    frames = members["frames.jsonl"] * 40
    damaged = write_zip(
        tmp_path / "damaged.acpbundle",
        [("manifest.json", members["manifest.json"]), ("frames.jsonl", frames)],
    )
    data = bytearray(damaged.read_bytes())
    start = data.find(b"PK\x03\x04", 4)  # the second member: frames.jsonl
    name_length = int.from_bytes(data[start + 26 : start + 28], "little")
    body = start + 30 + name_length
    data[body + 20 : body + 220] = bytes(range(200))
    damaged.write_bytes(bytes(data))
    refused_by_every_reader(damaged, tmp_path, "damaged bundle")


def test_a_truncated_bundle_and_a_non_zip_are_refused(
    members: dict[str, bytes], tmp_path: Path
) -> None:
    good = write_zip(tmp_path / "good.acpbundle", list(members.items()))
    truncated = tmp_path / "truncated.acpbundle"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    refused_by_every_reader(truncated, tmp_path, "not a readable bundle")
    text = tmp_path / "notes.acpbundle"
    text.write_text("just some notes\n")
    refused_by_every_reader(text, tmp_path, "not a readable bundle")


def test_redact_verify_calls_nothing_but_an_export_or_bundle_clean(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not an export\n")
    done = acp_proxy("redact", "--verify", str(notes))
    assert (done.returncode, done.stdout) == (2, "")
    assert "not an acp-proxy JSONL export or bundle" in done.stderr


def test_a_bundle_after_schemas_fetch_records_their_version_not_their_folder(
    tmp_path: Path,
) -> None:
    installed = installed_schemas()  # as `schemas fetch` (.ci/install-schemas) left them
    home = tmp_path / "home" / "alice"
    schemas = home / ".cache" / "acp-proxy" / "schemas" / "2.4.0"
    shutil.copytree(installed, schemas)
    env = {**os.environ, "HOME": str(home), "USER": "alice", "XDG_CACHE_HOME": str(home / ".cache")}
    env.pop("ACP_PROXY_SCHEMAS", None)
    db = tmp_path / "rec.sqlite"
    write_recording(db, V1_CONVERSATION, label="v1")
    out = tmp_path / "report.acpbundle"
    done = acp_proxy("bundle", "--db", str(db), "v1", "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(out) as bundle:
        manifest = json.loads(bundle.read("manifest.json"))
        check = json.loads(bundle.read("check.json"))
        every_byte = b"".join(bundle.read(name) for name in bundle.namelist())
    recorded = manifest["check"]["schemas"]
    assert (recorded["package"], recorded["version"]) == ("@agentclientprotocol/sdk", "2.4.0")
    assert set(recorded["files"]) == {
        "v1/schema.json", "v1/schema.unstable.json", "v2/schema.json", "v2/schema.unstable.json",
    }  # fmt: skip
    assert manifest["check"]["skipped"] == []
    assert check["schemas"] == "@agentclientprotocol/sdk 2.4.0"
    assert b"alice" not in every_byte
    assert str(home).encode() not in every_byte


def _compressible_line(mib: int) -> bytes:
    """``mib`` MiB with no newline that deflate shrinks about a hundredfold (within the ratio
    bound, so only the line bound can refuse it)."""
    import random

    letters = random.Random(8)
    block = bytearray()
    while len(block) < 1 << 20:
        block += bytes(letters.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(4))
        block += b"a" * 600
    return bytes(block[: 1 << 20]) * mib


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_member_of_one_endless_line_is_refused_at_the_line_bound(
    members: dict[str, bytes], tmp_path: Path
) -> None:
    from acp_proxy.store.recording_files import MAX_LINE_BYTES

    frames = _compressible_line((MAX_LINE_BYTES >> 20) + 16)
    endless = write_zip(
        tmp_path / "endless.acpbundle", [("manifest.json", members["manifest.json"]),
                                         ("frames.jsonl", frames)],
    )  # fmt: skip
    del frames
    for reader in (["show"], ["import"], ["redact", "--verify"]):
        args = [*reader, str(endless)]
        if reader[0] != "redact":
            args += ["--db", str(tmp_path / "other.sqlite")]
        done = measured(tmp_path / "peak", *args)
        peak = int((tmp_path / "peak").read_text())
        assert done.returncode == 2, (reader, done.stdout, done.stderr)
        assert done.stdout == "", reader
        assert done.stderr.count("\n") == 1, done.stderr
        assert "frames.jsonl: line 1 is longer than" in done.stderr, done.stderr
        # the bound and the interpreter, never the whole member
        assert peak < (MAX_LINE_BYTES >> 10) + (80 << 10), (reader, peak)
