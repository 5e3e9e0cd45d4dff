"""A fake ACP client for the performance benchmark: drives one command (an agent, or a wrapper
around one) and measures it. Standard library only; usable as a library (``run_stream``,
``run_ping``) or on its own::

    python -m tests.perf.client --shape small --count 20000 -- acp-proxy record -- \\
        python tests/perf/agent.py

Every run spawns the command in a new session, sends ``initialize`` (the start-up time is from
spawning to that response) and ``session/new``, then:

- stream (shape small | medium | large1m | large16m): one ``session/prompt`` asking the agent
  (tests/perf/agent.py) for ``count`` frames; reads stdout until they and the prompt response
  have arrived, timed from writing the prompt to the last byte, and checks that the bytes are
  exactly the agent's (length, CRC32 and line count).
- ping: ``warmup`` untimed then ``count`` timed prompts, one at a time, each answered by one
  response; round-trip percentiles in microseconds.

Then it closes stdin and times the exit drain: stdin closed -> the command has exited (a proxy
that is still committing its recording shows here). Resource figures:

- ``wrapper_hwm_mb``: VmHWM from /proc summed over the command's process tree, the agent
  (a process whose argv[0] or argv[1] ends with ``perf/agent.py``) excluded; for acp-proxy that
  is the proxy and its forked recorder process. Sampled just before stdin
  is closed and every 10 ms until exit (a high-water mark only grows while a process lives).
- ``cpu_tree_s``: user+system CPU of the command and every descendant it reaped (wait4), the
  agent included; ``cpu_agent_s`` is what the agent reports of itself, ``cpu_wrapper_s`` the
  difference.
- ``frames_*`` / ``bytes_*``: every frame and byte exchanged (handshake included), which is
  what a recorder must hold afterwards.

MB = 10**6 bytes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from tests.perf import agent

AGENT_SCRIPT = Path(agent.__file__).resolve()
# How the agent is told apart in a process tree: argv[0] or argv[1] ends with this.
AGENT_MARKER = "perf/agent.py"
READ_SIZE = 1 << 20
DEFAULT_COUNTS = {"small": 200_000, "medium": 20_000, "large1m": 300, "large16m": 16,
                  "ping": 2000}  # fmt: skip
PROMPT_ID = 3
PING_FIRST_ID = 100


def agent_argv() -> list[str]:
    """The command line of the fake agent."""
    return [sys.executable, str(AGENT_SCRIPT)]


def _request(request_id: int, method: str, params: dict[str, object]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


INITIALIZE = _request(1, "initialize", {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
    "clientInfo": {"name": "acp-perf-client", "version": "1"},
})  # fmt: skip
SESSION_NEW = _request(2, "session/new", {"cwd": "/tmp", "mcpServers": []})


def prompt(request_id: int, shape: str = "echo", count: int = 0) -> bytes:
    params: dict[str, object] = {
        "sessionId": agent.SESSION_ID,
        "prompt": [{"type": "text", "text": "ping" if shape == "echo" else "go"}],
    }
    if shape != "echo":
        params["_meta"] = {agent.META_KEY: {"shape": shape, "count": count}}
    return _request(request_id, "session/prompt", params)


_expected_cache: dict[tuple[str, int], tuple[int, int, int]] = {}


def expected_stream(shape: str, count: int) -> tuple[int, int, int]:
    """(CRC32, bytes, lines) the client must receive after the prompt (cached)."""
    key = (shape, count)
    if key not in _expected_cache:
        crc = size = 0
        for part in agent.stream_parts(shape, count, PROMPT_ID):
            crc = zlib.crc32(part, crc)
            size += len(part)
        _expected_cache[key] = (crc, size, count + 1)
    return _expected_cache[key]


@dataclass
class RunResult:
    """One run of one command; ``None`` where a figure does not apply or was not measured."""

    shape: str
    count: int
    ok: bool = False
    error: str | None = None
    rc: int | None = None
    startup_ms: float | None = None
    # stream
    exact: bool | None = None
    frames: int | None = None
    bytes: int | None = None
    seconds: float | None = None
    fps: float | None = None
    mbps: float | None = None
    # ping
    p50_us: float | None = None
    p99_us: float | None = None
    max_us: float | None = None
    mean_us: float | None = None
    # exit and resources
    exit_ms: float | None = None
    trailing_bytes: int | None = None
    cpu_tree_s: float | None = None
    cpu_agent_s: float | None = None
    cpu_wrapper_s: float | None = None
    wrapper_hwm_mb: float | None = None
    agent_hwm_mb: float | None = None
    wrapper_pids: int | None = None
    # everything exchanged, handshake included
    frames_sent: int = 0
    bytes_sent: int = 0
    frames_received: int = 0
    bytes_received: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            continue
        fields = text[text.rindex(b")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _hwm_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class TreeMemory:
    """Peak RSS (VmHWM) of a process tree, split into the agent and everything else."""

    def __init__(self, root: int, agent_marker: str) -> None:
        self._root = root
        self._marker = agent_marker.encode()
        self._pids: dict[int, bool] = {}  # pid -> is the agent
        self._peak_kb: dict[int, int] = {}

    def discover(self) -> None:
        """Find the tree (a full /proc scan: done outside timed sections)."""
        children = _children_map()
        todo = [self._root]
        while todo:
            pid = todo.pop()
            todo += children.get(pid, [])
            if pid in self._pids:
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    argv = cmdline.read().split(b"\0")
            except OSError:
                continue
            self._pids[pid] = any(arg.endswith(self._marker) for arg in argv[:2])
        self.sample()

    def sample(self) -> None:
        """Re-read the high-water marks of the known processes (cheap)."""
        for pid in self._pids:
            kb = _hwm_kb(pid)
            if kb is not None and kb > self._peak_kb.get(pid, 0):
                self._peak_kb[pid] = kb

    def totals_mb(self) -> tuple[float, float, int]:
        """(wrapper MB, agent MB, number of wrapper processes)."""
        wrapper = sum(kb for pid, kb in self._peak_kb.items() if not self._pids[pid])
        agent_kb = sum(kb for pid, kb in self._peak_kb.items() if self._pids[pid])
        wrappers = sum(1 for is_agent in self._pids.values() if not is_agent)
        return wrapper * 1024 / 1e6, agent_kb * 1024 / 1e6, wrappers


class Session:
    """One spawned command, its pipes and a watchdog that kills it when it hangs."""

    def __init__(
        self, argv: Sequence[str], result: RunResult, stderr: IO[bytes] | int | None,
        timeout: float,
    ) -> None:  # fmt: skip
        self.result = result
        self._tmp = tempfile.mkdtemp(prefix="acp-perf-client-")
        self._stats = os.path.join(self._tmp, "agent.json")
        env = dict(os.environ, **{agent.STATS_ENV: self._stats})
        self.t_spawn = time.perf_counter()
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            bufsize=0, env=env, start_new_session=True,
        )  # fmt: skip
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.pending = b""
        self.memory = TreeMemory(self.proc.pid, AGENT_MARKER)
        self.timed_out = False
        self._watchdog = threading.Timer(timeout, self._kill)
        self._watchdog.daemon = True
        self._watchdog.start()

    def _kill(self) -> None:
        self.timed_out = True
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view) :]
        self.result.frames_sent += data.count(b"\n")
        self.result.bytes_sent += len(data)

    def read(self) -> bytes:
        chunk = os.read(self.rfd, READ_SIZE)
        if not chunk:
            state = "timed out" if self.timed_out else "closed its stdout"
            raise EOFError(f"the command {state} (pending {self.pending[:120]!r})")
        self.result.bytes_received += len(chunk)
        self.result.frames_received += chunk.count(b"\n")
        return chunk

    def readline(self) -> bytes:
        while b"\n" not in self.pending:
            self.pending += self.read()
        line, _, self.pending = self.pending.partition(b"\n")
        return line + b"\n"

    def handshake(self) -> None:
        self.send(INITIALIZE)
        line = self.readline()
        self.result.startup_ms = (time.perf_counter() - self.t_spawn) * 1e3
        if b'"id":1' not in line:
            raise ValueError(f"unexpected initialize answer {line[:200]!r}")
        self.send(SESSION_NEW)
        line = self.readline()
        if agent.SESSION_ID.encode() not in line:
            raise ValueError(f"unexpected session/new answer {line[:200]!r}")
        self.memory.discover()

    def finish(self) -> None:
        """Close stdin, drain stdout, reap: exit time, CPU and peak memory."""
        result = self.result
        self.memory.discover()
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(0.01):
                self.memory.sample()

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.perf_counter()
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        trailing = len(self.pending)
        while chunk := os.read(self.rfd, READ_SIZE):
            trailing += len(chunk)
        _, status, usage = os.wait4(self.proc.pid, 0)
        result.exit_ms = (time.perf_counter() - t0) * 1e3
        stop.set()
        sampler.join()
        self.proc.returncode = result.rc = os.waitstatus_to_exitcode(status)
        result.trailing_bytes = trailing
        result.cpu_tree_s = usage.ru_utime + usage.ru_stime
        result.cpu_agent_s = self._agent_cpu()
        if result.cpu_agent_s is not None:
            result.cpu_wrapper_s = max(0.0, result.cpu_tree_s - result.cpu_agent_s)
        result.wrapper_hwm_mb, result.agent_hwm_mb, result.wrapper_pids = self.memory.totals_mb()

    def _agent_cpu(self) -> float | None:
        try:
            with open(self._stats, encoding="utf-8") as stats:
                return float(json.load(stats)["cpu_s"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def close(self) -> None:
        """Always called: stop the watchdog, kill what is left, remove the temporary folder."""
        self._watchdog.cancel()
        if self.proc.returncode is None:
            self._kill()
            self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        shutil.rmtree(self._tmp, ignore_errors=True)


def _run(
    argv: Sequence[str], result: RunResult, body: str, stderr: IO[bytes] | int | None,
    timeout: float, warmup: int,
) -> RunResult:  # fmt: skip
    session = Session(argv, result, stderr, timeout)
    try:
        session.handshake()
        if body == "ping":
            _ping(session, result, warmup)
        else:
            _stream(session, result)
        session.finish()
        result.ok = (
            result.rc == 0 and result.trailing_bytes == 0 and result.exact is not False
            and not session.timed_out
        )  # fmt: skip
        if not result.ok and result.error is None:
            result.error = (
                f"rc={result.rc} trailing={result.trailing_bytes} exact={result.exact} "
                f"timed_out={session.timed_out}"
            )
    except (OSError, EOFError, ValueError) as error:
        result.ok = False
        result.error = f"{type(error).__name__}: {error}"
    finally:
        session.close()
    return result


def _stream(session: Session, result: RunResult) -> None:
    exp_crc, exp_size, exp_lines = expected_stream(result.shape, result.count)
    data = prompt(PROMPT_ID, result.shape, result.count)
    read, rfd = os.read, session.rfd
    t0 = time.perf_counter()
    session.send(data)
    pending, session.pending = session.pending, b""
    crc, size, lines = zlib.crc32(pending), len(pending), pending.count(b"\n")
    while lines < exp_lines:
        chunk = read(rfd, READ_SIZE)
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        size += len(chunk)
        lines += chunk.count(b"\n")
    seconds = time.perf_counter() - t0
    result.bytes_received += size - len(pending)
    result.frames_received += lines - pending.count(b"\n")
    if lines < exp_lines:
        state = "timed out" if session.timed_out else "closed its stdout"
        raise EOFError(f"the command {state} after {lines} of {exp_lines} lines")
    result.seconds = seconds
    result.frames = lines
    result.bytes = size
    result.fps = lines / seconds
    result.mbps = size / seconds / 1e6
    result.exact = (crc, size, lines) == (exp_crc, exp_size, exp_lines)


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def _ping(session: Session, result: RunResult, warmup: int) -> None:
    clock = time.perf_counter_ns
    latencies: list[float] = []
    exact = True
    for index in range(warmup + result.count):
        request_id = PING_FIRST_ID + index
        data = prompt(request_id)
        t0 = clock()
        session.send(data)
        line = session.readline()
        t1 = clock()
        exact = exact and line == agent.prompt_response(request_id)
        if index >= warmup:
            latencies.append((t1 - t0) / 1e3)
    latencies.sort()
    result.exact = exact
    result.p50_us = _percentile(latencies, 0.50)
    result.p99_us = _percentile(latencies, 0.99)
    result.max_us = latencies[-1]
    result.mean_us = statistics.fmean(latencies)


def run_stream(
    argv: Sequence[str], shape: str, count: int, *, stderr: IO[bytes] | int | None = None,
    timeout: float = 300.0,
) -> RunResult:  # fmt: skip
    """Spawn ``argv`` and stream ``count`` frames of ``shape`` through it."""
    expected_stream(shape, count)  # computed before spawning: never inside a timed section
    return _run(argv, RunResult(shape, count), "stream", stderr, timeout, 0)


def run_ping(
    argv: Sequence[str], count: int, *, warmup: int = 100,
    stderr: IO[bytes] | int | None = None, timeout: float = 300.0,
) -> RunResult:  # fmt: skip
    """Spawn ``argv`` and time ``count`` prompt round trips after ``warmup`` untimed ones."""
    return _run(argv, RunResult("ping", count), "ping", stderr, timeout, warmup)


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.client", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--shape", default="small", choices=(*agent.SHAPES, "ping"))
    parser.add_argument("--count", type=int, help="frames or round trips (default per shape)")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument(
        "command", nargs=argparse.REMAINDER,
        help="command to drive, after -- (default: the fake agent itself)",
    )  # fmt: skip
    options = parser.parse_args(args)
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    command = command or agent_argv()
    count = options.count or DEFAULT_COUNTS[options.shape]
    if options.shape == "ping":
        result = run_ping(command, count, timeout=options.timeout)
    else:
        result = run_stream(command, options.shape, count, timeout=options.timeout)
    print(json.dumps(result.as_dict()))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
