"""Replay's I/O shells in this process (replay/shell/loop.py on anyio, and plain.py for a client
served without an agent: every client-side test runs on both): the client on ``os.pipe`` pairs.

A scripted conversation (the interface of replay/modes.py) says what to send and records what
the shell told it; the agent, when there is one, is tests/support/agents/fake_agent.py. The
client is a thread of this test on the other ends of the pipes.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.acp import Direction
from acp_proxy.replay.modes import Actions, ForClient
from acp_proxy.replay.shell.loop import Outcome, serve
from acp_proxy.replay.shell.plain import serve_client
from tests.support.fixtures_acp import V1_CONVERSATION
from tests.support.processes import assert_gone, wait_for_pid
from tests.support.replay_helpers import agent_bytes, client_frames, engine

FAKE = Path(__file__).resolve().parents[2] / "support" / "agents" / "fake_agent.py"
WAIT_S = 20
S = 10**9


def fake_agent(*args: str) -> list[str]:
    return [sys.executable, str(FAKE), *args]


@dataclass
class Scripted:
    """A conversation scripted by the test: ``react`` sees each call and may change the plan."""

    has_client: bool = True
    wants_agent: bool = False
    to_client: bytearray = field(default_factory=bytearray)
    to_agent: bytearray = field(default_factory=bytearray)
    close_agent: bool = False
    done: bool = False
    wake_at: int | None = None
    react: Callable[[Scripted, str, object], None] = lambda *_: None
    seen: list[tuple[str, object]] = field(default_factory=list)
    steps: int = 0

    def _saw(self, name: str, value: object) -> None:
        self.seen.append((name, value))
        self.react(self, name, value)

    def client_frame(self, raw: bytes, now: int) -> None:
        self._saw("client_frame", raw)

    def client_closed(self, now: int) -> None:
        self._saw("client_closed", None)

    def agent_frame(self, raw: bytes, now: int) -> None:
        self._saw("agent_frame", raw)

    def agent_closed(self, now: int) -> None:
        self._saw("agent_closed", None)

    def agent_failed(self, reason: str) -> None:
        self._saw("agent_failed", reason)

    def agent_stalled(self, seconds: float) -> None:
        self._saw("agent_stalled", seconds)

    def stop(self, reason: str) -> None:
        self._saw("stop", reason)

    def step(self, now: int) -> Actions:
        self.steps += 1
        self._saw("step", now)
        out, agent = bytes(self.to_client), bytes(self.to_agent)
        self.to_client.clear()
        self.to_agent.clear()
        return Actions(out, agent, self.wake_at, self.wants_agent, self.close_agent, self.done)

    def names(self) -> list[str]:
        return [name for name, _ in self.seen if name != "step"]

    def values(self, name: str) -> list[object]:
        return [value for seen, value in self.seen if seen == name]


def ends_on(*names: str) -> Callable[[Scripted, str, object], None]:
    def react(conversation: Scripted, name: str, _value: object) -> None:
        if name in names:
            conversation.done = True

    return react


class Client:
    """The other ends of the shell's stdin and stdout, each closed at most once."""

    def __init__(self) -> None:
        self.shell_stdin, self.stdin = os.pipe()
        self.stdout, self.shell_stdout = os.pipe()
        self._open = {self.shell_stdin, self.stdin, self.stdout, self.shell_stdout}

    def close(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            os.close(fd)

    def close_all(self) -> None:
        for fd in list(self._open):
            self.close(fd)

    def read_all(self) -> bytes:
        """Everything the shell writes until its stdout closes."""
        out = b""
        while chunk := os.read(self.stdout, 65536):
            out += chunk
        return out


def run(
    conversation: Scripted | ForClient, peer: Callable[[Client], object] | None = None, *,
    timeout: float = 5.0, grace: float = 1.0, agent: list[str] | None = None,
    agent_log: list[tuple[Direction, int, bytes]] | None = None, plain: bool = False,
) -> tuple[Outcome, float, list[object]]:  # fmt: skip
    """Serve ``conversation`` with ``peer`` as the client; the outcome, seconds, peer's result."""
    client = Client()
    result: list[object] = []
    thread = None
    if peer is not None:
        thread = threading.Thread(target=lambda: result.append(peer(client)), daemon=True)
        thread.start()
    log = None if agent_log is None else (lambda d, t, c: agent_log.append((d, t, c)))
    start = time.monotonic()
    try:
        if plain:
            assert agent is None
            outcome = serve_client(
                conversation, int(timeout * S), int(grace * S),
                stdin_fd=client.shell_stdin, stdout_fd=client.shell_stdout,
            )  # fmt: skip
        else:
            outcome = serve(
                conversation, int(timeout * S), int(grace * S), agent_argv=agent,
                agent_log=log, stdin_fd=client.shell_stdin, stdout_fd=client.shell_stdout,
            )  # fmt: skip
        elapsed = time.monotonic() - start
        client.close(client.shell_stdout)  # the peer reading stdout sees its end
        if thread is not None:
            thread.join(WAIT_S)
            assert not thread.is_alive(), "the client thread did not finish"
    finally:
        client.close_all()
    return outcome, elapsed, result


def echo(conversation: Scripted, name: str, value: object) -> None:
    if name == "client_frame":
        assert isinstance(value, bytes)
        conversation.to_client += value
    elif name == "client_closed":
        conversation.done = True


# --- the client side ------------------------------------------------------------------------


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_frames_in_pieces_come_out_whole_and_client_eof_ends_the_run(plain: bool) -> None:
    def peer(client: Client) -> bytes:
        for piece in (b'{"a":1}\n{"b"', b":2}\n", b'{"c":3}'):  # the last line has no newline
            os.write(client.stdin, piece)
        client.close(client.stdin)
        return client.read_all()

    conversation = Scripted(react=echo)
    outcome, _, (out,) = run(conversation, peer, plain=plain)
    assert out == b'{"a":1}\n{"b":2}\n{"c":3}'
    assert conversation.values("client_frame") == [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}']
    assert conversation.names()[-1] == "client_closed"
    assert outcome == Outcome(signal=None, agent_returncode=None)


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
@settings(max_examples=25, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")), max_size=8),
    tail=st.binary(max_size=50).map(lambda b: b.replace(b"\n", b"")),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=6),
)
def test_the_conversation_gets_the_clients_lines_whatever_the_pieces(
    lines: list[bytes], tail: bytes, cuts: list[int], plain: bool
) -> None:
    data = b"".join(line + b"\n" for line in lines) + tail
    bounds = sorted({0, len(data), *(cut for cut in cuts if cut < len(data))})

    def peer(client: Client) -> bytes:
        for start, end in itertools.pairwise(bounds):
            os.write(client.stdin, data[start:end])
        client.close(client.stdin)
        return client.read_all()

    conversation = Scripted(react=echo)
    _, _, (out,) = run(conversation, peer, plain=plain)
    expected = [line + b"\n" for line in lines] + ([tail] if tail else [])
    assert conversation.values("client_frame") == expected
    assert out == data  # and what it sent went out whole, in order


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_a_replay_over_pipes_sends_the_recorded_bytes(plain: bool) -> None:
    expected = agent_bytes(V1_CONVERSATION)

    def peer(client: Client) -> bytes:
        os.write(client.stdin, b"".join(client_frames(V1_CONVERSATION)))
        got = b""
        while len(got) < len(expected):
            chunk = os.read(client.stdout, 65536)
            assert chunk
            got += chunk
        client.close(client.stdin)
        return got + client.read_all()

    replay = engine(V1_CONVERSATION)
    _, _, (out,) = run(ForClient(replay), peer, plain=plain)
    assert out == expected
    assert replay.ending == "the client closed the connection"
    assert not replay.diverged


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_a_client_that_closed_its_end_of_stdout_stops_the_run(plain: bool) -> None:
    def peer(client: Client) -> None:
        client.close(client.stdout)  # EPIPE for the shell's next write
        os.write(client.stdin, b'{"ping":1}\n')

    conversation = Scripted(react=echo)
    _, elapsed, _ = run(conversation, peer, plain=plain)
    assert conversation.values("stop") == ["the client closed its end of the connection"]
    assert elapsed < WAIT_S / 2


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_a_stalled_client_is_given_up_after_the_timeout(plain: bool) -> None:
    conversation = Scripted(to_client=bytearray(b"x" * (1 << 20)))  # and no one reads it
    _, elapsed, _ = run(conversation, timeout=0.3, plain=plain)
    assert conversation.values("stop") == ["the client read nothing for 0.3s"]
    assert 0.3 <= elapsed < WAIT_S / 2


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_a_slow_client_that_keeps_reading_is_not_stalled(plain: bool) -> None:
    size = 256 * 1024
    conversation = Scripted(to_client=bytearray(b"y" * size))

    def peer(client: Client) -> int:
        got = 0
        while got < size:
            time.sleep(0.02)  # the client is slow on purpose: progress, not speed, counts
            got += len(os.read(client.stdout, 8192))
        conversation.done = True
        os.write(client.stdin, b"{}\n")  # any event has the shell look again
        return got

    _, elapsed, (got,) = run(conversation, peer, timeout=0.3, plain=plain)
    assert got == size
    assert "stop" not in conversation.names()
    assert elapsed > 0.3  # longer than the timeout in all, yet never stalled for that long


def _flags(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_GETFL)


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_a_terminals_flags_are_never_changed(plain: bool) -> None:
    master, slave = os.openpty()
    before = _flags(slave)
    during: list[int] = []

    def react(conversation: Scripted, name: str, value: object) -> None:
        if name == "client_frame":
            during.append(_flags(slave))
            assert isinstance(value, bytes)
            conversation.to_client += value
            conversation.done = True

    os.write(master, b"hi\n")
    try:
        shell = serve_client if plain else serve
        outcome = shell(Scripted(react=react), 5 * S, S, stdin_fd=slave, stdout_fd=slave)
        assert outcome.signal is None
        assert during == [before]
        assert _flags(slave) == before
        assert not before & os.O_NONBLOCK
    finally:
        os.close(master)
        os.close(slave)


# --- the agent side -------------------------------------------------------------------------


def test_agent_eof_delivers_its_last_line_and_its_exit_status() -> None:
    conversation = Scripted(has_client=False, wants_agent=True, react=ends_on("agent_closed"))
    outcome, _, _ = run(conversation, agent=fake_agent("crash"))
    frames = conversation.values("agent_frame")
    assert frames == [b'{"jsonrpc":"2.0","method":"session/update","params":{}}\n', b'{"jsonrpc":']
    assert conversation.names()[-1] == "agent_closed"
    assert outcome.agent_returncode == 1


def test_an_agent_that_stops_reading_its_stdin_breaks_nothing() -> None:
    conversation = Scripted(has_client=False, wants_agent=True, react=ends_on("agent_closed"))
    conversation.to_agent += b"bye\n" + b"z" * (8 << 20)  # far more than it reads: EPIPE
    log: list[tuple[Direction, int, bytes]] = []
    outcome, elapsed, _ = run(conversation, agent=fake_agent("exit", "0"), agent_log=log)
    assert outcome.agent_returncode == 0
    assert "agent_stalled" not in conversation.names()
    written = b"".join(chunk for side, _, chunk in log if side is Direction.CLIENT_TO_AGENT)
    assert written.startswith(b"bye\n")
    assert len(written) < 8 << 20
    assert elapsed < WAIT_S / 2


def test_an_agent_that_reads_nothing_is_stalled_after_the_timeout() -> None:
    conversation = Scripted(has_client=False, wants_agent=True, react=ends_on("agent_stalled"))
    conversation.to_agent += b"z" * (4 << 20)
    outcome, elapsed, _ = run(conversation, agent=fake_agent("deaf"), timeout=0.3, grace=0.3)
    assert conversation.values("agent_stalled") == [0.3]
    assert outcome.agent_returncode == -signal.SIGTERM  # stdin closed, the grace, then SIGTERM
    assert elapsed < WAIT_S / 2


def test_an_agent_whose_output_does_not_end_after_stdin_closes_is_stopped() -> None:
    conversation = Scripted(has_client=False, wants_agent=True, close_agent=True,
                            react=ends_on("stop"))  # fmt: skip
    outcome, elapsed, _ = run(conversation, agent=fake_agent("deaf"), grace=0.3)
    assert conversation.values("stop") == ["the agent's output did not end after its stdin closed"]
    assert outcome.agent_returncode == -signal.SIGTERM
    assert elapsed < WAIT_S / 2


def test_an_agent_that_cannot_start_is_the_conversations_to_handle() -> None:
    conversation = Scripted(has_client=False, wants_agent=True, react=ends_on("agent_failed"))
    outcome, _, _ = run(conversation, agent=["/no/such/agent"])
    assert conversation.values("agent_failed") == ["cannot run '/no/such/agent': command not found"]
    assert outcome.agent_returncode is None


# --- signals and timeouts -------------------------------------------------------------------


def _ends_on_stop(conversation: Scripted, name: str, _value: object) -> None:
    if name == "stop":
        conversation.done = True


def _signal_when_started(pidfile: Path, signum: int) -> Callable[[Client], int]:
    """A client that, once the agent wrote its pid, sends this process ``signum``."""

    def peer(_client: Client) -> int:
        pid = wait_for_pid(pidfile)
        os.kill(os.getpid(), signum)
        return pid

    return peer


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_goes_to_the_agents_group_and_stops_the_run(
    tmp_path: Path, signum: signal.Signals
) -> None:
    conversation = Scripted(has_client=False, wants_agent=True, react=_ends_on_stop)
    pidfile = tmp_path / "pid"
    peer = _signal_when_started(pidfile, signum)
    outcome, elapsed, (pid,) = run(conversation, peer, agent=fake_agent("pidfile", str(pidfile)),
                                   grace=1.0)  # fmt: skip
    assert conversation.values("stop") == [f"ended by {signum.name}"]
    assert outcome == Outcome(signal=signum, agent_returncode=-signum)  # its own signal killed it
    assert elapsed < 1.0  # the grace: it did not take SIGKILL to end it
    assert_gone(pid)


def test_an_agent_that_ignores_the_signal_is_killed_after_the_grace(tmp_path: Path) -> None:
    conversation = Scripted(has_client=False, wants_agent=True, react=_ends_on_stop)
    pidfile = tmp_path / "pid"
    peer = _signal_when_started(pidfile, signal.SIGTERM)
    agent = fake_agent("pidfile", str(pidfile), "--ignore-all")
    outcome, elapsed, (pid,) = run(conversation, peer, agent=agent, grace=0.5)
    assert outcome == Outcome(signal=signal.SIGTERM, agent_returncode=-signal.SIGKILL)
    assert 0.5 <= elapsed < 0.5 + WAIT_S / 4
    assert_gone(pid)


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_after_a_signal_the_run_ends_within_the_grace_whatever_the_conversation_says(
    plain: bool,
) -> None:
    def react(conversation: Scripted, name: str, _value: object) -> None:
        if name == "client_frame":
            os.kill(os.getpid(), signal.SIGTERM)
            conversation.to_client += b"z" * (1 << 20)  # more than the client will read

    def peer(client: Client) -> None:
        os.write(client.stdin, b"{}\n")

    conversation = Scripted(react=react)  # never done
    outcome, elapsed, _ = run(conversation, peer, grace=0.3, plain=plain)
    assert outcome.signal == signal.SIGTERM
    assert conversation.values("stop") == ["ended by SIGTERM"]
    assert 0.3 <= elapsed < WAIT_S / 2


@pytest.mark.parametrize("plain", [False, True], ids=["anyio", "plain"])
def test_the_conversations_wake_up_time_is_kept_without_busy_waiting(plain: bool) -> None:
    start = time.monotonic_ns()

    def react(conversation: Scripted, name: str, value: object) -> None:
        if name == "step":
            assert isinstance(value, int)
            if conversation.wake_at is None:
                conversation.wake_at = value + S // 10
            elif value >= conversation.wake_at:
                conversation.done = True

    conversation = Scripted(react=react)
    run(conversation, timeout=5.0, plain=plain)
    last = conversation.values("step")[-1]
    assert isinstance(last, int)
    assert last - start >= S // 10
    assert conversation.steps < 10
