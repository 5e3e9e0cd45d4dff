"""A real-peer session seeded with secrets, bundled: the bundle holds none of them.

The demo client and agent (official ACP Python SDK) talk through ``acp-proxy record``, with
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
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.processes import acp_proxy as run_acp_proxy
from tests.support.schemas import installed_schemas

GITHUB = "ghp_" + "R3dact" * 6  # in the prompt
ANTHROPIC = "sk-ant-api03-" + "Zq7" * 15  # in the served file
ENV_VALUE = "mellow-harbor-7391-quartz"  # the agent's MY_API_TOKEN: no known shape
EMAIL = "dana.lee@example.net"  # in the served file
USER = "alice"


def run(
    args: list[str], env: dict[str, str], cwd: Path, check: bool = True
) -> subprocess.CompletedProcess[str]:
    done = run_acp_proxy(*args, cwd=cwd, env=env)
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root = tmp_path_factory.mktemp("bug")
    home = root / "home" / USER
    project = home / "project"
    project.mkdir(parents=True)
    (project / "settings.env").write_text(
        f"MY_API_TOKEN={ENV_VALUE}\nANTHROPIC_API_KEY={ANTHROPIC}\n# ask {EMAIL}\n"
    )
    env = {**os.environ, "HOME": str(home), "USER": USER, "MY_API_TOKEN": ENV_VALUE}
    env.pop("ACP_PROXY_SCHEMAS", None)
    env["XDG_CACHE_HOME"] = str(installed_schemas().parents[2])  # the schemas the project installs
    db = root / "rec.sqlite"
    proxy = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--label", "bug"]
    agent = [sys.executable, "-m", "acp_proxy.demo.agent"]
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--file", "settings.env"]
    client += ["--prompt", f"My token {GITHUB} stopped working, see the file"]
    done = subprocess.run(
        [*client, "--", *proxy, "--", *agent], cwd=project, env=env, capture_output=True,
        text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    exported = run(["export", "--db", str(db), "bug", "--format", "jsonl"], env, root).stdout
    for secret in (GITHUB, ANTHROPIC, ENV_VALUE, EMAIL, f"/{USER}/"):
        assert secret in exported, f"the session should hold {secret!r} before redaction"
    return root, env


def test_the_bundle_holds_none_of_the_secrets(session: tuple[Path, dict[str, str]]) -> None:
    root, env = session
    bundle, keep = root / "report.acpbundle", root / "private-map.json"
    args = ["bundle", "--db", str(root / "rec.sqlite"), "bug", "-o", str(bundle)]
    run([*args, "--keep-map", str(keep)], env, root)
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
    assert run(["redact", "--verify", str(bundle)], env, root).returncode == 0


def test_a_bundle_is_a_ref_for_show_export_check_and_import(
    session: tuple[Path, dict[str, str]],
) -> None:
    root, env = session
    bundle = root / "plain.acpbundle"
    run(
        ["bundle", "--db", str(root / "rec.sqlite"), "bug", "-o", str(bundle), "--drop-contents"],
        env,
        root,
    )
    shown = run(["show", str(bundle), "--method", "fs/*"], env, root).stdout
    assert "fs/read_text_file" in shown
    assert "[redacted:content:1]" in shown
    markdown = run(["export", str(bundle), "--format", "markdown"], env, root).stdout
    assert "[redacted:api-key:1]" not in markdown
    assert GITHUB not in markdown
    checked = run(["check", str(bundle), "--ignore", "ACP000"], env, root)
    assert "clean" in checked.stdout
    run(["import", "--db", str(root / "other.sqlite"), str(bundle)], env, root)


def test_verify_fails_on_the_unredacted_export_and_redact_export_is_clean(
    session: tuple[Path, dict[str, str]],
) -> None:
    root, env = session
    plain, clean = root / "plain.jsonl", root / "clean.jsonl"
    run(["export", "--db", str(root / "rec.sqlite"), "bug", "-o", str(plain)], env, root)
    found = run(["redact", "--verify", str(plain)], env, root, check=False)
    assert found.returncode == 1
    for secret in (GITHUB, ANTHROPIC, ENV_VALUE, EMAIL):
        assert secret not in found.stdout
    assert "github-token" in found.stdout
    assert "env" in found.stdout
    assert "email" in found.stdout
    run(
        ["export", "--db", str(root / "rec.sqlite"), "bug", "--redact", "-o", str(clean)], env, root
    )
    assert run(["redact", "--verify", str(clean)], env, root).returncode == 0


def test_a_redacted_recording_replays_to_the_same_real_client(
    session: tuple[Path, dict[str, str]],
) -> None:
    root, env = session
    bundle = root / "replay.acpbundle"
    run(["bundle", "--db", str(root / "rec.sqlite"), "bug", "-o", str(bundle)], env, root)
    project = root / "home" / USER / "project"
    prompt = f"My token {GITHUB} stopped working, see the file"
    client = [
        sys.executable,
        "-m",
        "acp_proxy.demo.client",
        "--file",
        "settings.env",
        "--prompt",
        prompt,
    ]
    direct = subprocess.run(
        [*client, "--", sys.executable, "-m", "acp_proxy.demo.agent"], cwd=project, env=env,
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    replayed = subprocess.run(
        [*client, "--", sys.executable, "-m", "acp_proxy", "replay", str(bundle)], cwd=project,
        env=env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert replayed.stdout == direct.stdout
