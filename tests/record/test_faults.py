"""Faults while recording, end to end: forwarding is never held past the bound, whatever is
not recorded is counted exactly and said, and the proxy's files are private.

A stopped recorder, a temporary folder that cannot take the recorder's overflow, standard
descriptors closed at start, a dangling symbolic link as ``--db``.
"""

from __future__ import annotations

import os
import select
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_proxy.store.database import BUSY_TIMEOUT_MS, connect
from tests.support.polling import until
from tests.support.processes import exists, run_to_end
from tests.support.proxy import FAKE_AGENT, proxy_argv, start

LINE = b'{"jsonrpc":"2.0","method":"_x","params":{"n":%07d,"pad":"%s"}}\n'


def _payload(path: Path, count: int, pad: int = 900) -> list[bytes]:
    lines = [LINE % (n, b"p" * pad) for n in range(count)]
    path.write_bytes(b"".join(lines))
    return lines


def _recorder_pid(proxy: subprocess.Popen[bytes]) -> int:
    """The recorder: forked from the proxy without exec, so it has the proxy's command line.

    The agent is spawned (and has exec'd) before the recorder is forked, so the recorder is
    looked for only once both children exist: a child caught between fork and exec has the
    proxy's command line too, and a busy machine makes that window wide.
    """
    deadline = time.monotonic() + 10
    children: list[str] = []
    while time.monotonic() < deadline:
        children = Path(f"/proc/{proxy.pid}/task/{proxy.pid}/children").read_text().split()
        if len(children) >= 2:
            pids = [
                int(p) for p in children if b"acp_proxy" in Path(f"/proc/{p}/cmdline").read_bytes()
            ]
            if len(pids) == 1:
                return pids[0]
        time.sleep(0.01)
    raise AssertionError(f"no recorder process among the proxy's children {children}")


def _read_all(fd: int, expected: bytes, seconds: float) -> float:
    """Read ``expected`` from ``fd``; return how long it took (failing after ``seconds``)."""
    started = time.monotonic()
    received = bytearray()
    while len(received) < len(expected):
        left = started + seconds - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        assert ready, f"only {len(received)} of {len(expected)} bytes within {seconds}s"
        chunk = os.read(fd, 1 << 20)
        assert chunk, f"end of file after {len(received)} of {len(expected)} bytes"
        received += chunk
    took = time.monotonic() - started
    assert received == expected
    return took


def _accounted(db: Path, lines: list[bytes]) -> tuple[int, int, str, str]:
    """Check that what was stored is a clean subset of ``lines`` (a2c) at the true offsets and
    that frames_lost and bytes_lost count exactly the rest; return those and status, error."""
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT offset, raw FROM frame WHERE direction = 'a2c' ORDER BY seq"
    ).fetchall()
    lost = con.execute(
        "SELECT frames_lost, bytes_lost, status, error FROM connection ORDER BY id DESC"
    ).fetchone()
    con.close()
    size = len(lines[0])
    for offset, raw in rows:
        assert bytes(raw) == lines[offset // size]
        assert offset % size == 0
    assert lost[0] == len(lines) - len(rows)
    assert lost[1] == size * lost[0]
    return lost


def test_a_stopped_recorder_holds_forwarding_at_most_the_bound(
    db_path: Path, tmp_path: Path
) -> None:
    lines = _payload(tmp_path / "payload.bin", 50_000)  # 46 MB
    proxy = start(proxy_argv(
        db_path, "emit", str(tmp_path / "payload.bin"), extra=("--max-recorder-wait", "0.5"),
    ))  # fmt: skip
    assert proxy.stdout is not None
    assert proxy.stdin is not None
    assert proxy.stderr is not None
    recorder = _recorder_pid(proxy)
    os.kill(recorder, signal.SIGSTOP)
    try:
        took = _read_all(proxy.stdout.fileno(), b"".join(lines), 20)
    finally:
        os.kill(recorder, signal.SIGCONT)
    assert took < 10  # a stream of this size takes well under a second unhindered
    proxy.stdin.close()
    assert proxy.wait(timeout=40) == 0
    said = proxy.stderr.read().decode()
    assert said.count("frames are left out of the recording") == 1, said
    assert "Traceback" not in said
    frames_lost, _, status, error = _accounted(db_path, lines)
    assert frames_lost > 0
    assert status == "incomplete"
    assert "the recorder fell behind" in error
    proxy.stdout.close()
    proxy.stderr.close()


def _on_a_full_tmpfs(argv: list[str], folder: Path) -> list[str]:
    """``argv`` run with TMPDIR on a 2 MiB tmpfs of its own (a mount namespace of its own)."""
    folder.mkdir()
    script = 'mount -t tmpfs -o size=2m tmpfs "$0" && TMPDIR="$0" exec "$@"'
    return ["unshare", "--map-root-user", "--mount", "sh", "-c", script, str(folder), *argv]


def test_a_full_temporary_folder_drops_frames_counted_and_never_stalls(
    db_path: Path, tmp_path: Path
) -> None:
    lines = _payload(tmp_path / "payload.bin", 30_000)  # 28 MB: far more than the tmpfs holds
    connect(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the recorder must queue, so its queue must spill
    argv = proxy_argv(db_path, "emit", str(tmp_path / "payload.bin"))
    proxy = start(_on_a_full_tmpfs(argv, tmp_path / "small-tmp"))
    assert proxy.stdout is not None
    assert proxy.stdin is not None
    assert proxy.stderr is not None
    try:
        took = _read_all(proxy.stdout.fileno(), b"".join(lines), 20)
    finally:
        holder.execute("COMMIT")
        holder.close()
    assert took < 5
    proxy.stdin.close()
    assert proxy.wait(timeout=40) == 0
    said = proxy.stderr.read().decode()
    assert said.count("spill file cannot be written") == 1, said
    assert "No space left on device" in said
    assert "Traceback" not in said
    frames_lost, _, status, error = _accounted(db_path, lines)
    assert frames_lost > 0
    assert status == "incomplete"
    assert "spill file cannot be written" in error
    proxy.stdout.close()
    proxy.stderr.close()


def _shell(
    command: str, db: Path, agent: str, **kwargs: object
) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--",
            sys.executable, FAKE_AGENT, agent]  # fmt: skip
    quoted = " ".join(f"'{a}'" for a in argv)
    return subprocess.run(
        ["sh", "-c", f"exec {quoted} {command}"],
        capture_output=True,
        timeout=30,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_closed_stdin_at_start_is_end_of_file_for_the_agent(db_path: Path) -> None:
    result = _shell("<&-", db_path, "echo")
    assert result.returncode == 0
    assert result.stderr == b""
    con = sqlite3.connect(db_path)
    assert con.execute("SELECT status, exit_code FROM connection").fetchone() == ("exited", 0)


def test_a_closed_stdout_at_start_still_records_every_frame(db_path: Path) -> None:
    lines = b"".join(b'{"n":%d}\n' % n for n in range(300))
    result = _shell(">&-", db_path, "echo", input=lines)
    assert result.returncode == 0
    con = sqlite3.connect(db_path)
    counts = con.execute(
        "SELECT frames_c2a, frames_a2c, frames_lost, status, exit_code FROM connection"
    ).fetchone()
    assert counts == (300, 300, 0, "exited", 0)
    raws = [bytes(r[0]) for r in con.execute("SELECT raw FROM frame WHERE direction = 'a2c'")]
    assert b"".join(raws) == lines


def test_a_dangling_symlink_as_db_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "target.sqlite"
    target.parent.mkdir()
    link = tmp_path / "rec.sqlite"
    link.symlink_to(target)
    result = run_to_end(proxy_argv(link, "echo"), text=False, input=b'{"a":1}\n', timeout=30)
    assert result.returncode == 0  # forwarding is untouched
    assert result.stdout == b'{"a":1}\n'
    assert result.stderr.count(b"\n") == 2  # the refusal, then what went unrecorded
    assert b"symbolic link to a missing file" in result.stderr
    assert b"nothing was recorded: 2 frames (16 bytes)" in result.stderr
    assert list(target.parent.iterdir()) == []


def test_every_folder_and_file_created_is_private(tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "c" / "rec.sqlite"
    old = os.umask(0o022)
    try:
        result = run_to_end(proxy_argv(db, "echo"), text=False, input=b'{"a":1}\n', timeout=30)
    finally:
        os.umask(old)
    assert result.returncode == 0
    for folder in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    created = list(db.parent.iterdir())
    assert db in created
    for path in created:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.parametrize("closed", ["0", "1", "2"])
def test_standard_descriptors_missing_at_start_are_opened_on_dev_null(
    closed: str, tmp_path: Path
) -> None:
    out = tmp_path / "where"
    code = (
        "import os, sys; from acp_proxy.cli.entry import open_missing_standard_fds; "
        "open_missing_standard_fds(); "
        f"where = os.path.realpath('/proc/self/fd/{closed}'); "
        "open(sys.argv[1], 'w').write(where)"
    )
    result = subprocess.run(
        ["sh", "-c", f'exec "$0" -c "$1" "$2" {closed}>&-', sys.executable, code, str(out)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0
    assert out.read_text() == "/dev/null"


def test_a_database_locked_past_the_busy_timeout_is_waited_for_not_abandoned(
    db_path: Path,
) -> None:
    connect(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer that keeps the lock past the timeout
    proxy = start(proxy_argv(db_path, "echo"))
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    assert proxy.stderr is not None
    lines = b"".join(b'{"n":%d}\n' % n for n in range(1000))
    proxy.stdin.write(lines)
    proxy.stdin.flush()
    took = _read_all(proxy.stdout.fileno(), lines, 10)
    assert took < 5  # forwarding never waits for the database
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000 + 20
    said = b""
    while b"waiting for it" not in said:  # the first attempt gave up: the recorder waits on
        assert time.monotonic() < deadline, said
        ready, _, _ = select.select([proxy.stderr], [], [], 0.1)
        if ready:
            said += os.read(proxy.stderr.fileno(), 4096)
    holder.execute("COMMIT")
    holder.close()
    proxy.stdin.close()
    assert proxy.wait(timeout=30) == 0
    said += proxy.stderr.read()
    assert said.count(b"\n") == 1, said
    con = sqlite3.connect(db_path)
    row = con.execute("SELECT status, frames_c2a, frames_a2c, frames_lost FROM connection")
    assert row.fetchone() == ("exited", 1000, 1000, 0)
    proxy.stdout.close()
    proxy.stderr.close()


def _frames_stored(db: Path) -> int:
    if not db.exists():  # connecting would create it
        return 0
    try:
        con = sqlite3.connect(db)
        try:
            return int(con.execute("SELECT count(*) FROM frame").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:  # not created yet
        return 0


def test_a_recorder_that_dies_leaves_its_connection_marked_incomplete(db_path: Path) -> None:
    proxy = start(proxy_argv(db_path, "echo"))
    assert proxy.stdin is not None
    assert proxy.stdout is not None
    assert proxy.stderr is not None
    first = b'{"jsonrpc":"2.0","method":"_one"}\n'
    proxy.stdin.write(first)
    proxy.stdin.flush()
    _read_all(proxy.stdout.fileno(), first, 10)
    until(lambda: _frames_stored(db_path), "the row and the first frame committed")
    os.kill(_recorder_pid(proxy), signal.SIGKILL)
    proxy.stdin.close()
    assert proxy.wait(timeout=30) == 0
    con = sqlite3.connect(db_path)
    status, error, exit_code, ended_ns, recorder = con.execute(
        "SELECT status, error, exit_code, ended_ns, recorder_pid FROM connection"
    ).fetchone()
    assert status == "incomplete"
    assert "the recorder process ended early" in error
    assert (exit_code, recorder) == (0, None)  # how the agent ended is kept all the same
    assert ended_ns is not None
    proxy.stdout.close()
    proxy.stderr.close()


@pytest.mark.timeout(180)
def test_a_recording_whose_proxy_was_killed_stays_live_while_its_recorder_writes(
    db_path: Path, tmp_path: Path
) -> None:
    lines = _payload(tmp_path / "payload.bin", 6000)  # more than the tap holds
    proxy = start(proxy_argv(db_path, "emit", str(tmp_path / "payload.bin")))
    assert proxy.stdout is not None
    until(lambda: _frames_stored(db_path), "the row and the first frames committed", 60)
    recorder = _recorder_pid(proxy)
    os.kill(recorder, signal.SIGSTOP)  # behind: everything else still to commit
    # and a busy neighbour from now on: the recorder (in the idle class) catches up slowly
    neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        _read_all(proxy.stdout.fileno(), b"".join(lines), 60)
        proxy.kill()
        proxy.wait()
        proxy.stdout.close()
        assert proxy.stdin is not None
        assert proxy.stderr is not None
        proxy.stdin.close()
        proxy.stderr.close()
        tidy = [sys.executable, "-m", "acp_proxy"]
        for args in (["delete", "1"], ["prune", "--keep", "0", "--yes"]):
            done = run_to_end([*tidy, *args, "--db", str(db_path)], timeout=60)
            assert done.returncode in (0, 2), done.stderr
            assert "Traceback" not in done.stderr
        assert sqlite3.connect(db_path).execute("SELECT id FROM connection").fetchall() == [(1,)]
        os.kill(recorder, signal.SIGCONT)
        until(lambda: not exists(recorder), "the recorder's end", 120, every=0.05)
    finally:
        neighbour.kill()
        neighbour.wait()
    con = sqlite3.connect(db_path)
    recorded = con.execute(
        "SELECT frames_c2a + frames_a2c + lines_stderr, recorder_pid FROM connection"
    ).fetchone()
    assert con.execute("SELECT connection_id, count(*) FROM frame GROUP BY 1").fetchall() == [
        (1, recorded[0])
    ]
    assert recorded[1] is None  # the recorder said it was done, proxy or not
    done = run_to_end([*tidy, "delete", "1", "--db", str(db_path)], text=False, timeout=60)
    assert done.returncode == 0, done.stderr
    echoed = run_to_end(proxy_argv(db_path, "echo"), text=False, input=b"{}\n", timeout=60)
    assert echoed.returncode == 0
    # a new id: the echo's request and answer, and nothing else
    assert con.execute("SELECT connection_id, count(*) FROM frame GROUP BY 1").fetchall() == [
        (2, 2)
    ]


def test_a_read_only_database_says_how_many_frames_went_unrecorded(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "rec.sqlite"
    connect(db).close()  # a recording database, then made read-only by a bind mount
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    argv = ["unshare", "--map-root-user", "--mount", "sh", "-c", script, str(folder),
            *proxy_argv(db, "echo")]  # fmt: skip
    lines = b'{"jsonrpc":"2.0","method":"_a"}\n{"jsonrpc":"2.0","method":"_b"}\n'
    done = run_to_end(argv, text=False, input=lines, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == lines
    said = done.stderr.decode()
    assert "nothing more will be recorded" in said
    assert "nothing was recorded: 4 frames (128 bytes) crossed unrecorded" in said, said
    assert "Traceback" not in said
