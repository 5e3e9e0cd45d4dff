"""Terminal conventions under a real pty: width, colour (NO_COLOR, --color), paging; tail."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from acp_proxy.cli.main import main as cli
from acp_proxy.cli.terminal import colour_wanted, pager_command
from acp_proxy.store.database import connect
from acp_proxy.store.writer import NewConnection, RecordingWriter
from tests.support.fixtures_acp import V1_CONVERSATION, V2_CONVERSATION
from tests.support.helpers import observe_all, write_recording
from tests.support.processes import started
from tests.support.terminal import on_pty

SGR = re.compile(rb"\x1b\[[0-9;]*m")
DEADLINE = 20.0


def _environ(**extra: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "PAGER")}
    return environ | {"TERM": "xterm"} | extra


def under_pty(args: list[str], columns: int, **extra: str) -> bytes:
    """Run ``acp-proxy ARGS`` with stdout on a pty ``columns`` wide; what it wrote there."""
    env = {"COLUMNS": None, "NO_COLOR": None, "PAGER": None, "TERM": "xterm", **extra}
    done = on_pty(*args, env=env, columns=columns, keep_newlines=True, timeout=DEADLINE)
    assert done.returncode == 0
    return done.output


@pytest.fixture
def recorded(db_path: Path) -> Path:
    write_recording(db_path, V1_CONVERSATION, label="v1")
    return db_path


def test_show_fits_the_terminal_width_in_colour(recorded: Path) -> None:
    out = under_pty(["show", "v1", "--db", str(recorded)], 60, PAGER="")
    lines = out.splitlines()
    assert len(lines) == len(V1_CONVERSATION)
    assert SGR.search(out)
    plain = [SGR.sub(b"", x).decode() for x in lines]
    assert max(len(x) for x in plain) <= 60
    assert any(x.endswith("…") for x in plain)  # a preview was cut to fit
    wide = under_pty(["show", "v1", "--db", str(recorded)], 200, PAGER="")
    assert max(len(SGR.sub(b"", x).decode()) for x in wide.splitlines()) > 60


def test_no_color_and_color_never_under_a_pty(recorded: Path) -> None:
    assert not SGR.search(
        under_pty(["show", "v1", "--db", str(recorded)], 80, NO_COLOR="1", PAGER="")
    )
    never = under_pty(["show", "v1", "--color", "never", "--db", str(recorded)], 80, PAGER="")
    assert not SGR.search(never)
    assert not SGR.search(under_pty(["ls", "--db", str(recorded)], 80, NO_COLOR="1", PAGER=""))


def test_color_always_into_a_pipe(recorded: Path) -> None:
    result = CliRunner().invoke(cli, ["show", "v1", "--color", "always", "--db", str(recorded)])
    assert "\x1b[" in result.output
    assert "\x1b[" not in CliRunner().invoke(cli, ["show", "v1", "--db", str(recorded)]).output


def test_long_output_goes_through_the_pager(recorded: Path) -> None:
    out = under_pty(["show", "v1", "--db", str(recorded)], 80, PAGER="sed s/^/PAGED:/")
    lines = out.splitlines()
    assert len(lines) == len(V1_CONVERSATION)
    assert all(x.startswith(b"PAGED:") for x in lines)
    assert SGR.search(out)  # the pager is told to show colour (less -R)
    plain = under_pty(["show", "v1", "--no-pager", "--db", str(recorded)], 80, PAGER="sed s/^/P:/")
    assert not plain.startswith(b"P:")


def test_colour_and_pager_choices() -> None:
    assert colour_wanted("auto", True, {})
    assert not colour_wanted("auto", True, {"NO_COLOR": "1"})
    assert colour_wanted("auto", True, {"NO_COLOR": ""})  # empty means unset (no-color.org)
    assert not colour_wanted("auto", False, {})
    assert colour_wanted("always", False, {"NO_COLOR": "1"})
    assert not colour_wanted("never", True, {})
    assert pager_command({}) == ["less", "-R"]
    assert pager_command({"PAGER": "most -s"}) == ["most", "-s"]
    assert pager_command({"PAGER": " "}) is None


def test_no_frames_matched_is_said_on_stderr(
    recorded: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    args = ["show", "v1", "--method", "nothing/*", "--db", str(recorded)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0
    assert result.stdout == ""
    assert capfd.readouterr().err == "acp-proxy: no frames matched\n"
    CliRunner().invoke(cli, ["tail", "v1", "--grep", "zzz", "--db", str(recorded)])
    assert capfd.readouterr().err == "acp-proxy: no frames matched\n"
    CliRunner().invoke(cli, ["show", "v1", "--grep", "Hello", "--db", str(recorded)])
    assert capfd.readouterr().err == ""


def _read_line_with_deadline(stream: object, what: bytes) -> bytes:
    assert hasattr(stream, "readline")
    line: bytes = stream.readline()
    assert what in line, line
    return line


def test_tail_wait_and_follow_all_then_ctrl_c(tmp_path: Path) -> None:
    db_path = tmp_path / "later.sqlite"  # not there yet: tail waits for it too
    argv = [sys.executable, "-m", "acp_proxy", "tail", "--wait", "--follow-all"]
    argv += ["--interval", "0.02", "--db", str(db_path)]
    with started(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_environ()) as tail:
        _drive_tail(tail, db_path)


def _drive_tail(tail: subprocess.Popen[bytes], db_path: Path) -> None:
    try:
        assert tail.stdout is not None
        assert tail.stderr is not None
        _read_line_with_deadline(tail.stderr, b"waiting for " + str(db_path).encode())
        # Written whole beside the path and moved into place, so tail never sees it half done
        # (a recording still being written is live, and tail would rightly follow it).
        whole = db_path.with_name("whole.sqlite")
        write_recording(whole, V1_CONVERSATION, label="before")
        os.replace(whole, db_path)
        _read_line_with_deadline(tail.stderr, b"waiting for the next connection")
        _, records = observe_all(V2_CONVERSATION)
        db = connect(db_path)
        first = RecordingWriter.start(db, NewConnection(["my-agent"], "/", "t", 1, label="one"))
        first.append(records[:1])
        _read_line_with_deadline(tail.stderr, b"following connection 2 (one)")
        assert tail.stdout.readline().split()[0] == b"1"
        first.append(records[1:2])
        assert tail.stdout.readline().split()[0] == b"2"
        first.update(status="exited", exit_code=0)
        _read_line_with_deadline(tail.stderr, b"connection 2 ended")
        _read_line_with_deadline(tail.stderr, b"waiting for the next connection")
        second = RecordingWriter.start(db, NewConnection(["agent"], "/", "t", 1, label="two"))
        second.append(records[:3])
        _read_line_with_deadline(tail.stderr, b"following connection 3 (two)")
        assert [tail.stdout.readline().split()[0] for _ in range(3)] == [b"1", b"2", b"3"]
        db.close()
        tail.send_signal(signal.SIGINT)
        assert tail.wait(timeout=DEADLINE) == 0
        assert b"Traceback" not in tail.stderr.read()
    finally:
        tail.kill()
        tail.wait()


def test_tail_f_on_a_finished_connection_says_how_to_wait(
    db_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    write_recording(db_path, V1_CONVERSATION, label="done")
    db = connect(db_path)
    db.execute("UPDATE connection SET status = 'exited', exit_code = 0")
    db.close()
    result = CliRunner().invoke(cli, ["tail", "-f", "-n", "1", "--db", str(db_path)])
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 1
    assert "has ended; `acp-proxy tail --wait` follows the next one" in capfd.readouterr().err


def test_tail_wait_with_a_ref_is_a_usage_error(db_path: Path) -> None:
    write_recording(db_path, V1_CONVERSATION, label="done")
    result = CliRunner().invoke(cli, ["tail", "--wait", "done", "--db", str(db_path)])
    assert result.exit_code == 2
    assert "give no REF" in result.stderr
