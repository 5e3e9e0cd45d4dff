"""``acp-proxy check``, ``diff`` and ``schemas``: exit codes, formats, messages."""

from __future__ import annotations

import io
import json
import os
import stat
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from acp_proxy.cli.main import main
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.fixtures_checks import CASES, PROMPT, res, v1
from tests.support.helpers import write_recording
from tests.support.schemas import installed_schemas

SCHEMAS = installed_schemas()


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def schema_env(tmp_path: Path) -> dict[str, str]:
    return {"ACP_PROXY_SCHEMAS": str(SCHEMAS), "XDG_CACHE_HOME": str(tmp_path / "cache")}


@pytest.fixture
def recordings(db_path: Path) -> Path:
    write_recording(db_path, V1_CONVERSATION, label="clean-v1")
    write_recording(db_path, V2_CONVERSATION, label="clean-v2")
    write_recording(db_path, [*v1(), PROMPT, res(2, {"stopReason": "done"})], label="bad")
    return db_path


def test_clean_recordings_exit_0(recordings: Path, schema_env: dict[str, str]) -> None:
    for ref in ("clean-v1", "clean-v2"):
        result = invoke("check", "--db", str(recordings), ref, env=schema_env)
        assert result.exit_code == 0, result.output
        assert result.output.startswith("clean: 1 connection, ")


def test_findings_exit_1_and_name_frame_rule_and_fix(
    recordings: Path, schema_env: dict[str, str]
) -> None:
    result = invoke("check", "--db", str(recordings), "bad", env=schema_env)
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(
        "connection 3 #6 a2c: error ACP000: the session/prompt result does not match the schema"
    )
    assert any(line.startswith("connection 3 #6 a2c: error ACP013: stopReason") for line in lines)
    assert any(line.startswith("    fix: ") for line in lines)
    assert lines[-1].startswith("2 errors, 0 warnings in 1 connection, ")


def test_json_format(recordings: Path, schema_env: dict[str, str]) -> None:
    result = invoke("check", "--db", str(recordings), "--all", "--format", "json", env=schema_env)
    assert result.exit_code == 1
    document = json.loads(result.output)
    assert [c["label"] for c in document["connections"]] == ["clean-v1", "clean-v2", "bad"]
    assert {f["rule"] for f in document["findings"]} == {"ACP000", "ACP013"}
    assert document["summary"]["errors"] == 2
    assert document["schemas"] == str(SCHEMAS)


def test_junit_format_parses(recordings: Path, schema_env: dict[str, str]) -> None:
    result = invoke("check", "--db", str(recordings), "--all", "--format", "junit", env=schema_env)
    assert result.exit_code == 1
    root = ET.fromstring(result.output.split("?>", 1)[1])
    suites = root.findall("testsuite")
    assert [s.get("failures") for s in suites] == ["0", "0", "2"]
    failed = [
        c.get("name", "") for c in suites[2].iter("testcase") if c.find("failure") is not None
    ]
    assert [name.split()[0] for name in failed] == ["ACP000", "ACP013"]


def test_junit_survives_control_characters_from_peers(db_path: Path) -> None:
    write_recording(db_path, [(CASES["ACP001"][0][0][0][0], b"\x01\x02 log\n")])
    result = invoke("check", "--db", str(db_path), "--ignore", "ACP000", "--format", "junit")
    assert result.exit_code == 1
    ET.fromstring(result.output.split("?>", 1)[1])


def test_select_and_ignore(recordings: Path, schema_env: dict[str, str]) -> None:
    result = invoke("check", "--db", str(recordings), "bad", "--ignore", "ACP000", "--ignore",
                    "ACP013", env=schema_env)  # fmt: skip
    assert result.exit_code == 0
    result = invoke("check", "--db", str(recordings), "bad", "--select", "ACP013", env=schema_env)
    assert result.exit_code == 1
    assert "ACP000" not in result.output


def test_usage_errors_exit_2(
    recordings: Path, schema_env: dict[str, str], tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert invoke("check", "--db", str(recordings), "--select", "NOPE").exit_code == 2
    result = invoke("check", "--db", str(recordings), "nothing-like-it", env=schema_env)
    assert result.exit_code == 2
    assert "no recording matches 'nothing-like-it'" in capfd.readouterr().err
    result = invoke("check", "--db", str(tmp_path / "none.sqlite"), env=schema_env)
    assert result.exit_code == 2


def test_without_schemas_or_npm_the_stateful_rules_run_after_one_line(
    recordings: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = {
        "XDG_CACHE_HOME": str(tmp_path / "empty"),
        "ACP_PROXY_SCHEMAS": "",
        "PATH": str(tmp_path),
    }
    result = invoke("check", "--db", str(recordings), "clean-v1", "--format", "json", env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["schemas"] is None
    err = capfd.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("acp-proxy: schema validation (ACP000) skipped: no ACP schemas installed")
    assert "acp-proxy schemas fetch" in err
    # Without schema validation no schemas are needed, and nothing is said.
    result = invoke("check", "--db", str(recordings), "clean-v1", "--ignore", "ACP000", env=env)
    assert result.exit_code == 0
    assert capfd.readouterr().err == ""
    # A folder the user names must hold schemas.
    named = invoke("check", "--db", str(recordings), "--schema-dir", str(tmp_path), env=env)
    assert named.exit_code == 2


def test_schemas_are_fetched_on_first_use_when_npm_is_there(
    recordings: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bin_dir = _fake_npm(tmp_path)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "c")}
    env["ACP_PROXY_SCHEMAS"] = ""
    result = invoke("check", "--db", str(recordings), "clean-v1", "--format", "json", env=env)
    assert result.exit_code == 0, result.output
    assert "9.9.9" in json.loads(result.output)["schemas"]
    err = capfd.readouterr().err
    assert err.startswith("acp-proxy: no ACP schemas installed yet: fetching ")
    assert err.count("\n") == 1
    invoke("check", "--db", str(recordings), "clean-v1", env=env)
    assert capfd.readouterr().err == ""  # installed now: said once


def _fake_npm(tmp_path: Path) -> Path:
    """An `npm` that packs a tarball shaped like @agentclientprotocol/sdk from the installed one."""
    tarball = tmp_path / "agentclientprotocol-sdk-9.9.9.tgz"
    with tarfile.open(tarball, "w:gz") as archive:
        manifest = json.dumps({"name": "@agentclientprotocol/sdk", "version": "9.9.9"}).encode()
        info = tarfile.TarInfo("package/package.json")
        info.size = len(manifest)
        archive.addfile(info, io.BytesIO(manifest))
        for version in ("v1", "v2"):
            for name in ("schema.json", "schema.unstable.json"):
                archive.add(SCHEMAS / version / name, f"package/schema/{version}/{name}")
    script = tmp_path / "npm"
    script.write_text(
        f'#!/bin/sh\nwhile [ "$1" != "--pack-destination" ]; do shift; done\ncp "{tarball}" "$2/"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return tmp_path


def test_schemas_fetch_installs_verifies_and_is_idempotent(tmp_path: Path) -> None:
    bin_dir = _fake_npm(tmp_path)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "c")}
    first = invoke("schemas", "fetch", "--version", "9.9.9", env=env)
    assert first.exit_code == 0, first.output
    assert first.output.startswith("installed: @agentclientprotocol/sdk 9.9.9 schemas in ")
    assert "v2 unstable" in first.output
    folder = tmp_path / "c" / "acp-proxy" / "schemas" / "9.9.9"
    assert sorted(p.name for p in folder.iterdir()) == ["SOURCE.json", "v1", "v2"]
    assert not (folder / "LICENSE").exists()
    modes = {p.relative_to(folder).as_posix(): p.stat().st_mode & 0o777 for p in folder.rglob("*")}
    assert modes
    assert all(m == (0o700 if (folder / n).is_dir() else 0o600) for n, m in modes.items())
    assert folder.stat().st_mode & 0o777 == 0o700
    second = invoke("schemas", "fetch", "--version", "9.9.9", env=env)
    assert second.output.startswith("already installed:")
    listed = invoke("schemas", "list", env=env)
    assert listed.output.startswith("9.9.9\t")


def test_schemas_fetch_without_npm_is_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = {"PATH": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "c")}
    result = invoke("schemas", "fetch", env=env)
    assert result.exit_code == 2
    err = capfd.readouterr().err
    assert err == "acp-proxy: npm is not installed: install Node.js (npm), then run again\n"
