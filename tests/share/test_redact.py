"""Redaction (redact.py, secrets.py, verify.py) and the ``redact`` command on built recordings.

Secrets in these tests are made up; each shape has one ``--verify`` test of its own.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main
from acp_proxy.share.redact import Redactor
from acp_proxy.share.secrets import PLACEHOLDER, Finder, environment_secrets
from acp_proxy.store import readers as store_read
from tests.support.helpers import A2C, C2A, ERR, line, write_recording

SK = "sk-proj-" + "Ab3" * 10
ENV_VALUE = "zq9-plain-looking-value-77"  # no known shape: only the environment gives it away
HOME, USER = "/home/alice", "alice"

SHAPES: dict[str, str] = {
    "openai": "sk-" + "a1B2" * 10,
    "openai-project": SK,
    "anthropic": "sk-ant-api03-" + "x9Y8" * 12,
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "aws": "AKIA" + "ABCDEFGH23456789",
    "github-classic": "ghp_" + "a" * 36,
    "github-oauth": "gho_" + "b" * 36,
    "github-user": "ghu_" + "c" * 36,
    "github-server": "ghs_" + "d" * 36,
    "github-refresh": "ghr_" + "e" * 36,
    "github-fine-grained": "github_pat_" + "11ABCDEFG0" * 8,
    "slack": "xoxb-1234567890-abcdefghij",
    "stripe": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
           "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2c3\n-----END RSA PRIVATE KEY-----",
    "email": "carol.smith+acp@example.org",
}  # fmt: skip


def finder(**env: str) -> Finder:
    return Finder(environment_secrets({"MY_API_TOKEN": ENV_VALUE, **env}), home=HOME, user=USER)


def request(i: int, method: str, params: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": i, "method": method, "params": params})


def prompt(i: int, text: str) -> bytes:
    return request(
        i, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": text}]}
    )


def recording(tmp_path: Path, exchange: list[tuple[Any, bytes]]) -> tuple[Any, int]:
    db = tmp_path / "r.sqlite"
    connection_id = write_recording(db, exchange, label="t")
    return store_read.open_for_reading(db), connection_id


def redacted(
    tmp_path: Path, exchange: list[tuple[Any, bytes]], **options: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Redactor]:
    db, connection_id = recording(tmp_path, exchange)
    before = list(store_read.export_rows(db, connection_id))
    redactor = Redactor(finder(), **options)
    after = []
    for record in store_read.export_rows(db, connection_id):
        record["paths"] = redactor.frame(record)
        after.append(record)
    return before, after, redactor


def test_same_value_same_placeholder_everywhere_and_n_counts_per_kind(tmp_path: Path) -> None:
    exchange = [
        (C2A, prompt(1, f"use {SK} and {SHAPES['anthropic']}")),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"note": f"got {SK} at {HOME}/p"}})),
        (ERR, f"log: {SK} in {HOME}/p\n".encode()),
    ]
    _, after, redactor = redacted(tmp_path, exchange)
    texts = [r["raw"].decode() for r in after]
    assert "[redacted:api-key:1]" in texts[0]
    assert "[redacted:api-key:2]" in texts[0]
    assert all("[redacted:api-key:1]" in t for t in texts)
    assert "/home/[redacted:user:1]/p" in texts[1]
    assert "/home/[redacted:user:1]/p" in texts[2]
    assert redactor.mapping[SK] == "[redacted:api-key:1]"
    assert redactor.counts == {"api-key": 2, "user": 1}
    assert all(SK not in t and "alice" not in t for t in texts)
    for placeholder in redactor.mapping.values():
        assert PLACEHOLDER.fullmatch(placeholder)


def test_unchanged_frames_keep_their_bytes_and_changed_ones_stay_valid_json(tmp_path: Path) -> None:
    odd = b'{"jsonrpc": "2.0" , "method":"_x/n", "params":{"a":1.0,"b":"\\u00e9"}}\r\n'
    big = (
        b'{"jsonrpc":"2.0","method":"_x/big","params":{"n":123456789012345678901234567890,"t":"'
        + SK.encode()
        + b'"}}\r\n'
    )
    exchange = [
        (C2A, odd),
        (C2A, big),
        (ERR, b"\xff\xfe not utf-8 " + SK.encode() + b"\n"),
        (C2A, prompt(2, "hello")),
    ]
    before, after, _ = redacted(tmp_path, exchange)
    assert after[0]["raw"] == before[0]["raw"] == odd
    assert after[0]["paths"] == []
    assert after[3]["raw"] == before[3]["raw"]
    assert after[1]["paths"] == ["$.params.t"]
    assert after[1]["raw"].endswith(b"}\r\n")
    parsed = json.loads(after[1]["raw"])
    assert parsed["params"]["n"] == 123456789012345678901234567890
    assert parsed["params"]["t"] == "[redacted:api-key:1]"
    assert after[2]["raw"] == b"\xff\xfe not utf-8 [redacted:api-key:1]\n"
    assert after[2]["paths"] == ["$"]
    for record in after:
        assert record["size"] == len(record["raw"])
    # offsets follow the redacted bytes, per direction
    c2a = [r for r in after if r["direction"] == "c2a"]
    assert [r["offset"] for r in c2a] == [
        0,
        len(c2a[0]["raw"]),
        len(c2a[0]["raw"]) + len(c2a[1]["raw"]),
    ]


def test_authenticate_env_headers_secret_keys_and_terminal_output(tmp_path: Path) -> None:
    env = [{"name": "GH_TOKEN", "value": "t0ken-value"}, {"name": "LANG", "value": "C.UTF-8"}]
    headers = [{"name": "Authorization", "value": "Basic dXNlcjpwYXNz"}]
    mcp = [{"name": "gh", "command": "mcp", "args": [], "env": env, "headers": headers}]
    output = base64.b64encode(f"export KEY={SK}\n".encode()).decode()
    login = {"methodId": "api-key", "apiKey": "hunter2", "_meta": {"x": "pin-1234"}}
    chunk = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": output}
    exchange = [
        (C2A, request(0, "authenticate", login)),
        (C2A, request(1, "session/new", {"cwd": "/w", "mcpServers": mcp})),
        (C2A, request(2, "_x/cfg", {"settings": {"clientSecret": "abc", "maxTokens": 10}})),
        (A2C, request(3, "session/update", {"sessionId": "s1", "update": chunk})),
    ]
    _, after, redactor = redacted(tmp_path, exchange)
    auth, new, cfg, term = (json.loads(r["raw"]) for r in after)
    assert auth["params"] == {
        "methodId": "api-key",
        "apiKey": "[redacted:auth:1]",
        "_meta": {"x": "[redacted:auth:2]"},
    }
    assert new["params"]["mcpServers"][0]["env"] == [
        {"name": "GH_TOKEN", "value": "[redacted:env:1]"},
        {"name": "LANG", "value": "C.UTF-8"},
    ]
    assert new["params"]["mcpServers"][0]["headers"][0]["value"] == "[redacted:header:1]"
    assert cfg["params"]["settings"] == {"clientSecret": "[redacted:secret:1]", "maxTokens": 10}
    decoded = base64.b64decode(term["params"]["update"]["data"]).decode()
    assert decoded == "export KEY=[redacted:api-key:1]\n"
    assert "hunter2" in redactor.mapping


def test_drop_contents_keeps_the_shape(tmp_path: Path) -> None:
    read = request(5, "fs/read_text_file", {"sessionId": "s1", "path": "/w/a.py"})
    served = line({"jsonrpc": "2.0", "id": 5, "result": {"content": "print('hi')\n"}})
    blocks = [{"type": "resource", "resource": {"uri": "file:///w/a", "text": "body"}},
              {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
              {"type": "text", "text": "plain words"}]  # fmt: skip
    diff = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c",
        "content": [{"type": "diff", "path": "/w/a", "oldText": "x", "newText": "y"}],
    }
    exchange = [
        (A2C, read),
        (C2A, served),
        (C2A, request(6, "session/prompt", {"sessionId": "s1", "prompt": blocks})),
        (A2C, request(7, "session/update", {"sessionId": "s1", "update": diff})),
    ]
    _, after, _ = redacted(tmp_path, exchange, drop_contents=True)
    assert after[0]["paths"] == []
    assert json.loads(after[1]["raw"])["result"] == {"content": "[redacted:content:1]"}
    prompt_blocks = json.loads(after[2]["raw"])["params"]["prompt"]
    assert prompt_blocks[0]["resource"] == {"uri": "file:///w/a", "text": "[redacted:content:2]"}
    assert base64.b64decode(prompt_blocks[1]["data"]) == b"[redacted:content:3]"
    assert prompt_blocks[2] == {"type": "text", "text": "plain words"}
    content = json.loads(after[3]["raw"])["params"]["update"]["content"][0]
    assert content == {
        "type": "diff",
        "path": "/w/a",
        "oldText": "[redacted:content:4]",
        "newText": "[redacted:content:5]",
    }


def export_file(tmp_path: Path, text: str) -> Path:
    header = {"format": "acp-proxy-jsonl", "version": 1, "connection": {"uid": "u1", "cwd": "/w"}}
    frame = {"seq": 1, "direction": "c2a", "raw": prompt(1, text).decode()}
    path = tmp_path / "e.jsonl"
    path.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(frame) + b"\n")
    return path


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_verify_catches_each_shape(tmp_path: Path, shape: str) -> None:
    secret = SHAPES[shape]
    clean = CliRunner().invoke(
        main,
        ["redact", "--verify", str(export_file(tmp_path, "nothing here"))],
        env={"HOME": HOME, "USER": USER},
    )
    assert clean.exit_code == 0, clean.output
    result = CliRunner().invoke(
        main,
        ["redact", "--verify", str(export_file(tmp_path, f"x {secret} y"))],
        env={"HOME": HOME, "USER": USER},
    )
    assert result.exit_code == 1, result.output
    assert "(seq 1) $.params.prompt[0].text" in result.output
    assert secret not in result.output
    assert f"({len(secret)} chars)" in result.output


@pytest.mark.parametrize(
    "text", [f"Bearer {'Zm9v' * 6}", "https://bob:pa55word@db.example.com/x", f"cd {HOME}/project"]
)
def test_verify_catches_bearer_url_passwords_and_home_paths(tmp_path: Path, text: str) -> None:
    result = CliRunner().invoke(
        main,
        ["redact", "--verify", str(export_file(tmp_path, text))],
        env={"HOME": "/nowhere", "USER": "nobody"},
    )
    assert result.exit_code == 1, result.output


def test_verify_catches_environment_values_and_env_files(tmp_path: Path) -> None:
    path = export_file(tmp_path, f"paste {ENV_VALUE} here")
    runner = CliRunner()
    assert (
        runner.invoke(main, ["redact", "--verify", str(path)], env={"MY_API_TOKEN": None}).exit_code
        == 0
    )
    assert (
        runner.invoke(
            main, ["redact", "--verify", str(path)], env={"MY_API_TOKEN": ENV_VALUE}
        ).exit_code
        == 1
    )
    env_file = tmp_path / "agent.env"
    env_file.write_text(f"# the agent's\nexport OTHER_SECRET='{ENV_VALUE}'\nLANG=C\n")
    with_file = runner.invoke(
        main,
        ["redact", "--verify", str(path), "--env-file", str(env_file)],
        env={"MY_API_TOKEN": None},
    )
    assert with_file.exit_code == 1
    assert ENV_VALUE not in with_file.output


def test_redact_command_writes_verified_output_and_a_private_map(tmp_path: Path) -> None:
    exchange = [(C2A, prompt(1, f"key {SK} mail {SHAPES['email']}")), (ERR, b"plain line\n")]
    write_recording(tmp_path / "r.sqlite", exchange, label="t")
    out, keep = tmp_path / "out.jsonl", tmp_path / "map.json"
    args = [
        "redact",
        "--db",
        str(tmp_path / "r.sqlite"),
        "t",
        "-o",
        str(out),
        "--keep-map",
        str(keep),
    ]
    result = CliRunner().invoke(main, args, env={"HOME": HOME, "USER": USER})
    assert result.exit_code == 0, result.output
    data = out.read_bytes()
    assert SK.encode() not in data
    assert SHAPES["email"].encode() not in data
    assert stat.S_IMODE(os.stat(keep).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    placeholders = json.loads(keep.read_text())["placeholders"]
    assert placeholders == {"[redacted:api-key:1]": SK, "[redacted:email:1]": SHAPES["email"]}
    lines = data.splitlines()
    header = json.loads(lines[0])
    assert header["redaction"]["placeholders"] == {"api-key": 1, "email": 1}
    assert json.loads(lines[1])["redacted"] == ["$.params.prompt[0].text"]
    assert "redacted" not in json.loads(lines[2])
    assert CliRunner().invoke(main, ["redact", "--verify", str(out)]).exit_code == 0
    imported = CliRunner().invoke(
        main, ["import", "--db", str(tmp_path / "other.sqlite"), str(out)]
    )
    assert imported.exit_code == 0, imported.output


def test_redact_refuses_output_that_still_fails_verification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_recording(tmp_path / "r.sqlite", [(C2A, prompt(1, f"key {SK}"))], label="t")
    monkeypatch.setattr(
        Redactor, "placeholder", lambda self, kind, value: value
    )  # a broken redactor
    out = tmp_path / "out.jsonl"
    args = ["redact", "--db", str(tmp_path / "r.sqlite"), "t", "-o", str(out)]
    refused = CliRunner().invoke(main, args)
    assert refused.exit_code == 1
    assert not out.exists()
    assert SK not in refused.output
    forced = CliRunner().invoke(main, [*args, "--force"])
    assert forced.exit_code == 0
    assert SK.encode() in out.read_bytes()


def test_a_secret_behind_json_escapes_is_still_found(tmp_path: Path) -> None:
    hidden = SK.replace("-", "\\u002d").replace("proj", "pr\\u006fj").encode()
    raw = b'{"jsonrpc":"2.0","method":"_x/n","params":{"t":"' + hidden + b'"}}\n'
    _, after, _ = redacted(tmp_path, [(C2A, raw), (C2A, b'{"a":"\\/home\\/alice\\/x"}\n')])
    assert json.loads(after[0]["raw"])["params"]["t"] == "[redacted:api-key:1]"
    assert json.loads(after[1]["raw"]) == {"a": "/home/[redacted:user:1]/x"}


def test_a_secret_only_in_a_column_is_redacted_there_too(tmp_path: Path) -> None:
    """A response's session id comes from its request: the column holds what its bytes do not."""
    token = SHAPES["github-classic"]
    session = f"sess-{token}"
    exchange = [
        (C2A, request(1, "session/prompt", {"sessionId": session, "prompt": []})),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
    ]
    before, after, _ = redacted(tmp_path, exchange)
    assert before[1]["session_id"] == session
    assert token not in before[1]["raw"].decode()
    assert after[1]["session_id"] == "sess-[redacted:github-token:1]"
    assert after[1]["raw"] == before[1]["raw"]  # its bytes had nothing to change


def test_a_token_split_over_two_chunks_is_redacted_in_the_bundle_transcript(
    tmp_path: Path,
) -> None:
    import zipfile

    token = SHAPES["github-classic"]
    half = len(token) // 2

    def chunk(text: str) -> bytes:
        return line({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
            "messageId": "m1", "content": {"type": "text", "text": text}}}})  # fmt: skip

    db = tmp_path / "r.sqlite"
    write_recording(db, [
        (C2A, prompt(1, "hi")), (A2C, chunk(f"use {token[:half]}")),
        (A2C, chunk(f"{token[half:]} now")),
        (A2C, line({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}})),
    ], label="t")  # fmt: skip
    bundle = tmp_path / "t.acpbundle"
    # --force: as root, the schema cache path (/root/...) looks like the user name to verify.py.
    result = CliRunner().invoke(
        main, ["bundle", "t", "-o", str(bundle), "--db", str(db), "--force"],
        env={"HOME": HOME, "USER": USER},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(bundle) as opened:
        transcript = opened.read("transcript.md").decode()
    assert "use [redacted:github-token:1] now" in transcript
    assert token not in transcript
