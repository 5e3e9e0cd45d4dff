"""A real-peer session seeded with secrets, bundled: the bundle holds none of them.

The demo client and agent (official ACP Python SDK) talk through ``acp-proxy record`` (the
session's demo recording, tests/support/demo_recording.py), with
secrets in the prompt, in an environment variable of the agent (whose value also sits in the
file the client serves, as a pasted ``.env`` would) and in that file. The check that the bundle
is clean is a plain substring search over every byte of every unzipped member, independent of
the redactor and of ``--verify``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.support.demo_recording import (
    AGENT,
    ANTHROPIC,
    EMAIL,
    ENV_VALUE,
    GITHUB,
    LABEL,
    USER,
    DemoRecording,
    client,
)
from tests.support.processes import acp_proxy as run_acp_proxy
from tests.support.processes import acp_proxy_argv
from tests.support.processes import run_to_end as run_command
from tests.support.schemas import installed_schemas


def run(
    args: list[str], env: dict[str, str], cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = run_acp_proxy(*args, cwd=cwd, env=env)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def session(demo_recording: DemoRecording) -> tuple[Path, dict[str, str]]:
    """The demo recording and its user's environment; the seeded secrets are there."""
    db, env = demo_recording.db, demo_recording.env
    export = ["export", "--db", str(db), LABEL, "--format", "jsonl"]
    exported = run(export, env, demo_recording.project).stdout
    for secret in (GITHUB, ANTHROPIC, ENV_VALUE, EMAIL, f"/{USER}/"):
        assert secret in exported, f"the session should hold {secret!r} before redaction"
    return db, env


def test_the_bundle_holds_none_of_the_secrets(
    session: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    db, env = session
    bundle, keep = tmp_path / "report.acpbundle", tmp_path / "private-map.json"
    args = ["bundle", "--db", str(db), LABEL, "-o", str(bundle)]
    run([*args, "--keep-map", str(keep)], env, tmp_path)
    with zipfile.ZipFile(bundle) as opened:
        names = opened.namelist()
        members = {name: opened.read(name) for name in names}
    assert set(names) == {
        "manifest.json",
        "frames.jsonl",
        "check.txt",
        "check.json",
        "transcript.md",
    }
    every_byte = b"\n".join([bundle.read_bytes(), *members.values()])
    for secret in (GITHUB, ANTHROPIC, ENV_VALUE, EMAIL, f"/{USER}/", f'/{USER}"'):
        assert secret.encode() not in every_byte, secret
    mapping = json.loads(keep.read_text())["placeholders"]
    assert stat.S_IMODE(os.stat(keep).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(bundle).st_mode) == 0o600
    assert {GITHUB, ANTHROPIC, ENV_VALUE, EMAIL, USER} <= set(mapping.values())
    assert keep.read_bytes() not in every_byte
    assert b"acp-proxy-redaction-map" not in every_byte
    manifest = json.loads(members["manifest.json"])
    assert manifest["agent"]["name"] == "acp-proxy-demo-agent"
    assert manifest["client"]["name"] == "acp-proxy-demo-client"
    assert manifest["protocol_version"] == 1
    assert manifest["bundled_on"]["python"]
    assert manifest["check"]["skipped"] == []
    assert manifest["check"]["schemas"]["version"] == installed_schemas().name  # not a folder
    assert "/home/[redacted:user:1]/project" in members["frames.jsonl"].decode()
    assert "## Session" in members["transcript.md"].decode()
    assert run(["redact", "--verify", str(bundle)], env, tmp_path).returncode == 0


def test_a_bundle_is_a_ref_for_show_export_check_and_import(
    session: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    db, env = session
    bundle = tmp_path / "plain.acpbundle"
    run(
        ["bundle", "--db", str(db), LABEL, "-o", str(bundle), "--drop-contents"],
        env,
        tmp_path,
    )
    shown = run(["show", str(bundle), "--method", "fs/*"], env, tmp_path).stdout
    assert "fs/read_text_file" in shown
    assert "[redacted:content:1]" in shown
    markdown = run(["export", str(bundle), "--format", "markdown"], env, tmp_path).stdout
    assert "[redacted:api-key:1]" not in markdown
    assert GITHUB not in markdown
    checked = run(["check", str(bundle), "--ignore", "ACP000"], env, tmp_path)
    assert "clean" in checked.stdout
    run(["import", "--db", str(tmp_path / "other.sqlite"), str(bundle)], env, tmp_path)


def test_verify_fails_on_the_unredacted_export_and_redact_export_is_clean(
    session: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    db, env = session
    plain, clean = tmp_path / "plain.jsonl", tmp_path / "clean.jsonl"
    run(["export", "--db", str(db), LABEL, "-o", str(plain)], env, tmp_path)
    found = run(["redact", "--verify", str(plain)], env, tmp_path, check=False)
    assert found.returncode == 1
    for secret in (GITHUB, ANTHROPIC, ENV_VALUE, EMAIL):
        assert secret not in found.stdout
    assert "github-token" in found.stdout
    assert "env" in found.stdout
    assert "email" in found.stdout
    run(["export", "--db", str(db), LABEL, "--redact", "-o", str(clean)], env, tmp_path)
    assert run(["redact", "--verify", str(clean)], env, tmp_path).returncode == 0


def test_a_redacted_recording_replays_to_the_same_real_client(
    demo_recording: DemoRecording, tmp_path: Path
) -> None:
    db, env, project = demo_recording.db, demo_recording.env, demo_recording.project
    bundle = tmp_path / "replay.acpbundle"
    run(["bundle", "--db", str(db), LABEL, "-o", str(bundle)], env, tmp_path)
    direct = run_command([*client(), *AGENT], cwd=project, env=env)
    assert direct.returncode == 0, direct.stderr
    replayed = run_command(
        [*client(), *acp_proxy_argv("replay", str(bundle))], cwd=project, env=env
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == direct.stdout
