"""acp-proxy record, end to end with fake agents: bytes, lifecycle, faults, the database.

Real ACP peers are in tests/integration; these agents do what real ones never do on purpose
(bad bytes, crashes, signals, never exiting, huge lines).
"""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import acp_proxy, run_to_end
from tests.support.proxy import FAKE_AGENT, proxy_argv, start


def read_exactly(fd: int, size: int, timeout: float = 20.0) -> bytes:
    data = b""
    while len(data) < size:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"only {len(data)} of {size} bytes arrived within {timeout}s"
        chunk = os.read(fd, size - len(data))
        assert chunk, f"EOF after {len(data)} of {size} bytes"
        data += chunk
    return data


def frames(db: Path, direction: str | None = None) -> list[sqlite3.Row]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    query = "SELECT * FROM frame"
    args: tuple[str, ...] = ()
    if direction:
        query += " WHERE direction = ?"
        args = (direction,)
    return con.execute(query + " ORDER BY connection_id, seq", args).fetchall()


def connection_row(db: Path) -> sqlite3.Row:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    row = con.execute("SELECT * FROM connection ORDER BY id DESC LIMIT 1").fetchone()
    assert row is not None
    return row


def test_a_short_line_crosses_at_once(db_path: Path) -> None:
    proxy = start(proxy_argv(db_path, "echo"))
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    message = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    proxy.stdin.write(message)
    proxy.stdin.flush()
    # The client keeps its stdin open: the echo must come back without more input.
    assert read_exactly(proxy.stdout.fileno(), len(message)) == message
    proxy.stdin.close()
    assert proxy.wait(timeout=20) == 0
    proxy.stdout.close()
    assert proxy.stderr is not None
    proxy.stderr.close()


ODD_BYTES = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"_meta":{"x":1}}}\r\n'
    b"\n"
    b"not json at all\n"
    b'{"jsonrpc":"2.0","id":"1","result":{}}\n'
    b"\xff\xfe\x00 binary \x00\n"
    b'[{"jsonrpc":"2.0","method":"_ext/batch"}]\n'
    b'{"jsonrpc":"2.0","method":"_unknown.vendor/thing","params":{"big":"'
    + b"z"
    * 300_000
    + b'"}}\n'
    b'{"jsonrpc":"2.0","id":7,"result":"no final newline"}'
)


def test_odd_bytes_pass_unchanged_and_are_recorded(db_path: Path, tmp_path: Path) -> None:
    payload = tmp_path / "payload.bin"
    payload.write_bytes(ODD_BYTES)
    client_bytes = b'{"jsonrpc":"2.0","id":1,"method":"x"}\r\n\xc3\x28\n{"partial":'
    result = run_to_end(
        proxy_argv(db_path, "emit", str(payload)), text=False, input=client_bytes, timeout=30
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ODD_BYTES
    assert Path(f"{payload}.in").read_bytes() == client_bytes
    assert result.stderr == b""
    a2c = frames(db_path, "a2c")
    c2a = frames(db_path, "c2a")
    assert b"".join(r["raw"] for r in a2c) == ODD_BYTES
    assert b"".join(r["raw"] for r in c2a) == client_bytes
    by_raw = {bytes(r["raw"]): r for r in a2c}
    assert by_raw[b"not json at all\n"]["bad_json"] == 1
    assert by_raw[b"\xff\xfe\x00 binary \x00\n"]["bad_utf8"] == 1
    assert by_raw[b'[{"jsonrpc":"2.0","method":"_ext/batch"}]\n']["batch"] == 1
    assert a2c[-1]["no_newline"] == 1
    assert c2a[-1]["no_newline"] == 1
    offsets = [r["offset"] for r in a2c]
    assert offsets == [sum(len(r["raw"]) for r in a2c[:i]) for i in range(len(a2c))]
    row = connection_row(db_path)
    assert row["status"] == "exited"
    assert row["exit_code"] == 0
    assert (row["frames_a2c"], row["bytes_a2c"]) == (len(a2c), len(ODD_BYTES))


@pytest.mark.timeout(120)
def test_a_64_mib_line_streams_through(db_path: Path) -> None:
    size = 64 * 1024 * 1024
    proxy = start(proxy_argv(db_path, "big", str(size)))
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    # The first half arrives while the agent is still waiting to write the second half:
    # the proxy forwards chunk by chunk and never waits for the end of the line.
    first = read_exactly(proxy.stdout.fileno(), size // 2)
    proxy.stdin.write(b"go\n")
    proxy.stdin.close()
    rest = read_exactly(proxy.stdout.fileno(), size - size // 2, timeout=60)
    assert proxy.wait(timeout=60) == 0
    line = first + rest
    assert line.endswith(b'"}\n')
    recorded = frames(db_path, "a2c")
    assert len(recorded) == 1
    assert recorded[0]["size"] == size
    assert bytes(recorded[0]["raw"]) == line
    proxy.stdout.close()
    assert proxy.stderr is not None
    proxy.stderr.close()


def test_agent_stderr_passes_through_and_is_recorded(db_path: Path) -> None:
    result = run_to_end(
        proxy_argv(db_path, "echo-stderr"), text=False, input=b"hello\n", timeout=30
    )
    assert result.stdout == b"hello\n"
    assert result.stderr == b"agent got 6 bytes\n"
    lines = frames(db_path, "stderr")
    assert [bytes(r["raw"]) for r in lines] == [b"agent got 6 bytes\n"]
    assert lines[0]["kind"] == "stderr"
    # One timeline: the stderr line comes after the client frame that caused it.
    assert lines[0]["seq"] > frames(db_path, "c2a")[0]["seq"]


@pytest.mark.parametrize("code", [0, 3, 42])
def test_exit_code_is_the_agents(db_path: Path, code: int) -> None:
    result = run_to_end(
        proxy_argv(db_path, "exit", str(code)), text=False, input=b"x\n", timeout=30
    )
    assert result.returncode == code
    assert connection_row(db_path)["exit_code"] == code


def test_agent_killed_by_a_signal(db_path: Path) -> None:
    result = run_to_end(
        proxy_argv(db_path, "kill-self", str(int(signal.SIGKILL))),
        text=False,
        input=b"x\n",
        timeout=30,
    )
    assert result.returncode == 128 + signal.SIGKILL
    row = connection_row(db_path)
    assert (row["status"], row["exit_signal"], row["exit_code"]) == ("signalled", 9, None)


def test_agent_crashing_mid_stream(db_path: Path) -> None:
    result = run_to_end(proxy_argv(db_path, "crash"), text=False, input=b"", timeout=30)
    assert result.returncode == 1
    assert result.stdout.endswith(b'\n{"jsonrpc":')
    assert b"fake agent crashed mid-stream" in result.stderr
    a2c = frames(db_path, "a2c")
    assert [r["no_newline"] for r in a2c] == [0, 1]
    assert bytes(a2c[1]["raw"]) == b'{"jsonrpc":'
    assert any(b"RuntimeError" in bytes(r["raw"]) for r in frames(db_path, "stderr"))


@pytest.mark.parametrize("ignore_term", [False, True])
def test_agent_that_never_exits_on_eof(db_path: Path, ignore_term: bool) -> None:
    agent = ("deaf", "--ignore-term") if ignore_term else ("deaf",)
    result = run_to_end(
        proxy_argv(db_path, *agent, extra=("--grace", "0.3")), text=False, input=b"", timeout=30
    )
    expected = signal.SIGKILL if ignore_term else signal.SIGTERM
    assert result.returncode == 128 + expected
    assert b"sending SIGTERM" in result.stderr
    assert (b"sending SIGKILL" in result.stderr) == ignore_term
    assert result.stdout == b""


def test_signals_to_the_proxy_reach_the_agent(db_path: Path) -> None:
    proxy = start(proxy_argv(db_path, "on-term"))
    assert proxy.stderr is not None
    assert proxy.stdout is not None
    assert read_exactly(proxy.stderr.fileno(), len(b"ready\n")) == b"ready\n"
    proxy.send_signal(signal.SIGTERM)
    expected = b'{"jsonrpc":"2.0","method":"_bye","params":{}}\n'
    out = read_exactly(proxy.stdout.fileno(), len(expected))
    assert out == expected
    assert proxy.wait(timeout=20) == 0
    assert proxy.stdin is not None
    proxy.stdin.close()
    proxy.stdout.close()
    proxy.stderr.close()
    assert [bytes(r["raw"]) for r in frames(db_path, "a2c")] == [out]


def test_sigterm_to_the_proxy_ends_a_default_agent(db_path: Path) -> None:
    proxy = start(proxy_argv(db_path, "deaf"))
    assert proxy.stderr is not None
    read_exactly(proxy.stderr.fileno(), len(b"deaf agent ready\n"))
    proxy.send_signal(signal.SIGTERM)
    assert proxy.wait(timeout=20) == 128 + signal.SIGTERM
    for pipe in (proxy.stdin, proxy.stdout, proxy.stderr):
        assert pipe is not None
        pipe.close()
    assert connection_row(db_path)["exit_signal"] == signal.SIGTERM


def test_client_vanishing(db_path: Path) -> None:
    proxy = start(proxy_argv(db_path, "ticks", "20000"))
    assert proxy.stdout is not None
    assert proxy.stdin is not None
    first = read_exactly(proxy.stdout.fileno(), 10)
    # The client goes away: closes both pipes without reading the rest.
    proxy.stdout.close()
    proxy.stdin.close()
    assert proxy.wait(timeout=30) == 0
    assert proxy.stderr is not None
    assert proxy.stderr.read() == b""
    proxy.stderr.close()
    recorded = frames(db_path, "a2c")
    assert len(recorded) == 20000  # what the agent said is recorded even though nobody read it
    assert bytes(recorded[0]["raw"]).startswith(first)


def test_missing_agent_binary(db_path: Path) -> None:
    result = acp_proxy(
        "record",
        "--db",
        str(db_path),
        "--",
        "/nonexistent/agent-binary",
        "--flag",
        text=False,
        input=b"",
        timeout=30,
    )
    assert result.returncode == 127
    assert result.stdout == b""
    assert result.stderr.count(b"\n") == 1
    assert b"/nonexistent/agent-binary" in result.stderr
    assert b"Traceback" not in result.stderr
    row = connection_row(db_path)
    assert row["status"] == "spawn_failed"
    assert "command not found" in row["error"]


def test_non_executable_agent(db_path: Path, tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    result = run_to_end(
        [sys.executable, "-m", "acp_proxy", "record", "--db", str(db_path), "--", str(script)],
        text=False,
        input=b"",
        timeout=30,
    )
    assert result.returncode == 126
    assert result.stderr.count(b"\n") == 1
    assert connection_row(db_path)["status"] == "spawn_failed"


def test_unwritable_database_does_not_stop_forwarding(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    result = run_to_end(
        proxy_argv(blocker / "rec.sqlite", "echo"),
        text=False,
        input=b'{"a":1}\n' * 1000,
        timeout=30,
    )
    assert result.returncode == 0
    assert result.stdout == b'{"a":1}\n' * 1000
    assert result.stderr.count(b"\n") == 2  # the failure, then what went unrecorded
    assert b"forwarding continues" in result.stderr
    assert b"nothing was recorded: 2000 frames (16000 bytes)" in result.stderr
    assert b"Traceback" not in result.stderr


def test_eight_proxies_on_one_file(db_path: Path, tmp_path: Path) -> None:
    payload = tmp_path / "payload.bin"
    payload.write_bytes(b'{"jsonrpc":"2.0","method":"_x","params":{}}\n' * 2000)
    proxies = [
        subprocess.Popen(
            proxy_argv(db_path, "emit", str(payload), extra=("--label", f"p{n}")),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(8)
    ]
    results = [
        p.communicate(b'{"jsonrpc":"2.0","method":"_in"}\n' * 500, timeout=60) for p in proxies
    ]
    assert [p.returncode for p in proxies] == [0] * 8
    assert all(err == b"" for _, err in results)
    con = sqlite3.connect(db_path)
    counts = con.execute(
        "SELECT c.label, count(*) FROM frame f JOIN connection c ON c.id = f.connection_id "
        "GROUP BY c.id ORDER BY c.label"
    ).fetchall()
    assert counts == [(f"p{n}", 2500) for n in range(8)]


def test_sigkill_of_the_proxy_keeps_what_it_forwarded(db_path: Path) -> None:
    proxy = start(proxy_argv(db_path, "ticks", "3000"))
    assert proxy.stdout is not None
    line_size = len(b'{"jsonrpc":"2.0","method":"_tick","params":{"n":0}}\n')
    read_exactly(proxy.stdout.fileno(), line_size * 10)
    proxy.kill()
    proxy.wait(timeout=20)
    assert proxy.stdin is not None
    assert proxy.stderr is not None
    proxy.stdin.close()
    # The recorder process outlives the proxy: it commits what it was sent, then exits. It
    # shares the proxy's stderr, so end of file there means it is done.
    assert proxy.stderr.read() == b""
    proxy.stderr.close()
    proxy.stdout.close()
    con = sqlite3.connect(db_path)
    assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    raws = [bytes(r[0]) for r in con.execute("SELECT raw FROM frame ORDER BY seq")]
    # Everything the proxy had read is recorded: a clean prefix of what the agent sent, at
    # least what reached the client.
    assert len(raws) >= 10
    expected = [b'{"jsonrpc":"2.0","method":"_tick","params":{"n":%d}}\n' % n for n in range(3000)]
    assert raws == expected[: len(raws)]
    assert connection_row(db_path)["status"] == "running"  # the proxy never got to finish


def test_label_and_environment_database(tmp_path: Path) -> None:
    db = tmp_path / "from-env.sqlite"
    env = {**os.environ, "ACP_PROXY_DB": str(db)}
    result = acp_proxy(
        "record",
        "--label",
        "my-bug",
        "--",
        sys.executable,
        FAKE_AGENT,
        "echo",
        text=False,
        input=b"{}\n",
        timeout=30,
        env=env,
    )
    assert result.returncode == 0
    row = connection_row(db)
    assert row["label"] == "my-bug"
    assert row["argv"] == f'["{sys.executable}","{FAKE_AGENT}","echo"]'
    assert row["cwd"] == os.getcwd()
    assert row["agent_pid"] > 0
    assert row["proxy_version"]


def test_replies_never_precede_their_cause_in_the_timeline(db_path: Path) -> None:
    # The echo agent can only write what it has read: at every point of the timeline the
    # recorded agent bytes must not exceed the recorded client bytes.
    proxy = start(proxy_argv(db_path, "echo"))
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    for n in range(300):
        message = b'{"jsonrpc":"2.0","id":%d,"method":"_echo","params":{}}\n' % n
        proxy.stdin.write(message)
        proxy.stdin.flush()
        assert read_exactly(proxy.stdout.fileno(), len(message)) == message
    proxy.stdin.close()
    assert proxy.wait(timeout=20) == 0
    proxy.stdout.close()
    assert proxy.stderr is not None
    proxy.stderr.close()
    sent = echoed = 0
    for row in frames(db_path):
        if row["direction"] == "c2a":
            sent += row["size"]
        elif row["direction"] == "a2c":
            echoed += row["size"]
        assert echoed <= sent, f"seq {row['seq']}: an echo was recorded before its request"
    assert sent == echoed


def test_usage_error_starts_no_agent(tmp_path: Path) -> None:
    # An option the early launch does not understand sends the command line through click,
    # which stops before any agent is started.
    pid_file = tmp_path / "agent.pid"
    result = acp_proxy(
        "record",
        "--no-such-option",
        "--",
        "sh",
        "-c",
        f"echo $$ > {pid_file}; exec sleep 60",
        text=False,
        input=b"",
        timeout=30,
    )
    assert result.returncode == 2
    assert b"No such option" in result.stderr
    assert not pid_file.exists()


def test_agent_command_without_double_dash(db_path: Path) -> None:
    result = acp_proxy(
        "record",
        "--db",
        str(db_path),
        sys.executable,
        FAKE_AGENT,
        "echo",
        text=False,
        input=b"{}\n",
        timeout=30,
    )
    assert result.returncode == 0
    assert result.stdout == b"{}\n"
    assert [bytes(r["raw"]) for r in frames(db_path, "a2c")] == [b"{}\n"]


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--db", "x.sqlite"],
        ["--db=x.sqlite", "--label", "bug 12"],
        ["--label=l", "--grace", "0.5"],
        ["--grace=0", "--db", "sub/dir/r.sqlite"],
        ["--check", "--label", "x"],
        ["--ui", "--db", "x.sqlite"],
    ],
)
def test_early_launch_reads_options_exactly_as_the_command_does(
    options: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from acp_proxy.cli.entry import early_record_settings
    from acp_proxy.cli.main import main
    from acp_proxy.record import session as record_module

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("ACP_PROXY_DB", raising=False)
    seen: list[record_module.RecordOptions] = []
    monkeypatch.setattr(record_module, "record", lambda options, report: seen.append(options) or 0)
    args = ["record", *options, "--", "agent", "--its", "flags"]
    with pytest.raises(SystemExit):
        main(args=args)
    early = early_record_settings(args)
    assert early is not None
    (through_click,) = seen
    assert (
        early.agent, Path(early.db_path), early.label, early.grace, early.check, early.ui
    ) == (
        list(through_click.agent_argv), through_click.db_path, through_click.label,
        through_click.grace, through_click.check, through_click.ui,
    )  # fmt: skip


def test_early_launch_understands_only_options_record_has() -> None:
    from acp_proxy.cli.entry import EARLY_FLAGS, EARLY_OPTIONS, early_record_settings
    from acp_proxy.cli.main import main

    record_command = main.get_command(None, "record")  # type: ignore[arg-type]
    assert record_command is not None
    known = {name for param in record_command.params for name in param.opts}
    assert set(EARLY_OPTIONS) | set(EARLY_FLAGS) <= known
    for unclear in (
        ["record", "--help", "--", "a"],
        ["record", "--db", "--", "a"],
        ["record", "--grace", "-1", "--", "a"],
        ["record", "--grace", "nan", "--", "a"],
        ["record", "--db", "x", "--db", "y", "--", "a"],
        ["record", "--check=yes", "--", "a"],
        ["record", "--"],
        ["record", "a"],
        ["show", "--", "a"],
    ):
        assert early_record_settings(unclear) is None, unclear


def test_record_check_reports_findings_live_and_stores_them(db_path: Path, tmp_path: Path) -> None:
    # A response to a request nobody sent (ACP004 family) and an error without a message.
    payload = tmp_path / "payload.bin"
    payload.write_bytes(
        b'{"jsonrpc":"2.0","id":77,"result":{}}\n{"jsonrpc":"2.0","id":1,"error":{"code":"bad"}}\n'
    )
    result = run_to_end(
        proxy_argv(db_path, "emit", str(payload), extra=("--check",)),
        text=False,
        input=b'{"jsonrpc":"2.0","id":1,"method":"_x/y","params":{}}\n',
        timeout=60,
    )
    assert result.returncode == 0
    assert result.stdout == payload.read_bytes()  # checking changes nothing on the wire
    lines = [line for line in result.stderr.decode().splitlines() if "check:" in line]
    assert lines, result.stderr
    con = sqlite3.connect(db_path)
    stored = con.execute("SELECT seq, direction, rule, severity, message FROM finding").fetchall()
    assert len(stored) == len(lines)
    assert {rule for _, _, rule, _, _ in stored} >= {"ACP006A"}
    for seq, direction, rule, severity, _ in stored:
        assert severity in ("error", "warning")
        assert any(f"{rule}" in line for line in lines)
        if seq is not None:
            assert direction in ("c2a", "a2c")


def test_a_dead_recorder_does_not_stop_forwarding(db_path: Path) -> None:
    proxy = start(proxy_argv(db_path, "echo"))
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    first = b'{"jsonrpc":"2.0","method":"_one"}\n'
    proxy.stdin.write(first)
    proxy.stdin.flush()
    assert read_exactly(proxy.stdout.fileno(), len(first)) == first
    children = Path(f"/proc/{proxy.pid}/task/{proxy.pid}/children").read_text().split()
    # The recorder is forked from the proxy: it has the proxy's command line.
    recorder_pids = [
        int(pid) for pid in children if b"acp_proxy" in Path(f"/proc/{pid}/cmdline").read_bytes()
    ]
    assert len(recorder_pids) == 1
    os.kill(recorder_pids[0], signal.SIGKILL)
    second = b'{"jsonrpc":"2.0","method":"_two"}\n' * 2000  # more than a pipe holds
    proxy.stdin.write(second)
    proxy.stdin.flush()
    assert read_exactly(proxy.stdout.fileno(), len(second)) == second
    proxy.stdin.close()
    assert proxy.wait(timeout=30) == 0
    assert proxy.stderr is not None
    said = proxy.stderr.read()
    assert said.count(b"\n") == 1
    assert b"recorder process ended early" in said
    proxy.stdout.close()
    proxy.stderr.close()
