"""Shared machinery for the real-peer tests: fetch the peers, run them, read what crossed.

The peers are ACP programs written by others (the official SDKs' example clients and agents).
They are not vendored: the Python SDK's examples come from its source distribution, fetched
with pip on first use; the TypeScript SDK's come from npm via ``.ci/install-node-peers``, which
the fixture runs when they are missing (without node the TypeScript tests skip, or fail when
CI=true). Both land in ``$ACP_PROXY_PEERS_DIR`` (default ``<repo>/.peers``, git-ignored).

A run starts an example client and lets it spawn "its agent", which is one of:

* the agent itself (``direct``): the baseline of what the client shows without any proxy;
* ``bytetap -> MIDDLE -> bytetap -> agent``, where MIDDLE is either nothing (a self-check of
  this harness: two taps back to back must agree) or ``acp-proxy record``. The outer tap sees
  the bytes on the client's side of MIDDLE, the inner one the bytes on the agent's side.

``PeerRun`` then compares the two taps (both directions and stderr, byte for byte) and the
recording database against the taps; ``Recording.rpc_calls`` pairs requests with responses by
direction and exact id, and requires every response to come after its request in seq order
and the proxy's own pairing (``request_seq``) to agree.

Runs wait for end of file on the client's stderr, which every process of the run inherits, so
when a run returns all its processes are gone and every file they wrote is complete: no sleeps,
no polling.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import run_to_end, started

REPO = Path(__file__).resolve().parents[2]
BYTETAP = REPO / "tests" / "support" / "tools" / "bytetap.py"
INSTALL_NODE_PEERS = REPO / ".ci" / "install-node-peers"

TS_SDK = "@agentclientprotocol/sdk"
TS_SDK_VERSION = "1.9.0"  # must match .ci/install-node-peers

RUN_TIMEOUT_S = 45.0

Direction = str  # 'c2a', 'a2c' or 'stderr', as stored in frame.direction
C2A: Direction = "c2a"
A2C: Direction = "a2c"
STDERR: Direction = "stderr"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


# --------------------------------------------------------------------------- peers on disk


@pytest.fixture(scope="session")
def node() -> str:
    """The node binary; without it the TypeScript peers cannot run (fatal in CI)."""
    found = shutil.which("node")
    if found is None or shutil.which("npm") is None:
        reason = "node/npm not found: run .ci/install-node-peers to get them"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="session")
def ts_sdk(node: str, peers_dir: Path) -> Path:
    """The installed TypeScript SDK package folder (its examples are in ``dist/examples``)."""
    package = peers_dir / "node" / "node_modules" / "@agentclientprotocol" / "sdk"
    ws = peers_dir / "node" / "node_modules" / "ws"  # the remote examples need it
    if _package_version(package) != TS_SDK_VERSION or _package_version(ws) is None:
        env = {**os.environ, "ACP_PROXY_PEERS_DIR": str(peers_dir)}
        done = run_to_end(["bash", str(INSTALL_NODE_PEERS)], env=env, timeout=300)
        if done.returncode != 0 or _package_version(package) != TS_SDK_VERSION:
            pytest.fail(
                f"{INSTALL_NODE_PEERS.name} did not install {TS_SDK}@{TS_SDK_VERSION}:\n"
                f"{done.stdout}\n{done.stderr}"
            )
    return package


def _package_version(package: Path) -> str | None:
    try:
        return str(json.loads((package / "package.json").read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


# --------------------------------------------------------------------------- topologies


class Middle(Enum):
    """What sits between the two taps."""

    NOTHING = "nothing"  # the taps back to back: proves the harness itself is exact
    PROXY = "acp-proxy"  # the product under test


@dataclass(frozen=True)
class Launch:
    """How to start a client: its argv plus environment variables to set for it."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


# Builds a client launch around the agent command it should spawn; the Path is a scratch folder.
ClientFactory = Callable[[list[str], Path], Launch]


@dataclass(frozen=True)
class RunSpec:
    """One run: a client, the agent it should reach, and what (if anything) sits between."""

    name: str
    client: ClientFactory
    agent: list[str]
    stdin: bytes
    middle: Middle | None  # None: the client spawns the agent itself, no taps
    cwd: Path


def python_sdk_client(examples: Path) -> ClientFactory:
    """Launches the Python SDK's ``examples/client.py``, which takes the agent's argv."""

    def launch(agent: list[str], _scratch: Path) -> Launch:
        # client.py runs an existing executable program directly: here sys.executable.
        argv = [sys.executable, str(examples / "client.py"), *agent]
        return Launch(argv, {"PYTHONIOENCODING": "utf-8"})

    return launch


def tap(logdir: Path, argv: Sequence[str]) -> list[str]:
    return [sys.executable, str(BYTETAP), "--stderr", str(logdir), "--", *argv]


def proxy(db: Path, argv: Sequence[str]) -> list[str]:
    # ``python -m acp_proxy`` with the work tree first on PYTHONPATH (see run_env): it tests this
    # checkout even when an older copy is installed.
    return [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--", *argv]


def run_env(extra: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


# --------------------------------------------------------------------------- what a run saw


@dataclass(frozen=True)
class TapLog:
    """The bytes one bytetap saw: ``c2a`` from client side, ``a2c`` and ``stderr`` from agent."""

    c2a: bytes
    a2c: bytes
    stderr: bytes
    status: int  # exit status of the tapped process as Popen reports it (-N: killed by signal N)

    @classmethod
    def read(cls, logdir: Path) -> TapLog:
        status = logdir / "status"
        assert status.is_file(), f"{logdir.name}: the tap did not finish (no status file)"
        return cls(
            c2a=(logdir / "in.bin").read_bytes(),
            a2c=(logdir / "out.bin").read_bytes(),
            stderr=(logdir / "err.bin").read_bytes(),
            status=int(status.read_text()),
        )


@dataclass(frozen=True)
class Frame:
    seq: int
    direction: Direction
    raw: bytes
    request_seq: int | None  # the proxy's own pairing: seq of the request a response answers

    @property
    def message(self) -> Any:
        return json.loads(self.raw)


@dataclass(frozen=True)
class RpcCall:
    """A request and its response, as found in a recording by direction and exact id."""

    caller: Direction  # direction of the request
    id: Any
    method: str
    request_seq: int
    response_seq: int
    response: dict[str, Any]


@dataclass(frozen=True)
class Recording:
    """One connection as stored by ``acp-proxy record``."""

    connection: dict[str, Any]
    frames: list[Frame]

    @classmethod
    def read(cls, db: Path) -> Recording:
        assert db.is_file(), f"the proxy wrote no database at {db}"
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        con.row_factory = sqlite3.Row
        try:
            connections = [dict(row) for row in con.execute("SELECT * FROM connection")]
            assert len(connections) == 1, f"expected one connection, found {len(connections)}"
            rows = con.execute(
                "SELECT seq, direction, raw, request_seq FROM frame"
                " WHERE connection_id = ? ORDER BY seq",
                (connections[0]["id"],),
            ).fetchall()
        finally:
            con.close()
        frames = [Frame(*row) for row in rows]
        for frame in frames:
            assert isinstance(frame.raw, bytes), f"seq {frame.seq}: raw is not a BLOB"
        seqs = [f.seq for f in frames]
        assert len(set(seqs)) == len(seqs), "seq is not unique within the connection"
        return cls(connections[0], frames)

    def stream(self, direction: Direction) -> bytes:
        """The bytes of one direction: its frames in seq order, concatenated."""
        return b"".join(f.raw for f in self.frames if f.direction == direction)

    def messages(self, direction: Direction) -> list[Any]:
        return [f.message for f in self.frames if f.direction == direction]

    def rpc_calls(self) -> list[RpcCall]:
        """Pair every request with the one response that answers it, in request order.

        A response travels the other way with an identical id (``0`` and ``"0"`` differ); ids
        are per sender, so a client's request 0 and an agent's request 0 are separate calls.
        The proxy's own pairing (``frame.request_seq``) must agree.
        """
        calls: list[RpcCall] = []
        pending: dict[tuple[Direction, str], Frame] = {}
        for frame in self.frames:
            if frame.direction not in (C2A, A2C):
                continue
            msg = frame.message
            key_id = json.dumps(msg.get("id"))  # keeps the JSON type of the id
            if "method" in msg and "id" in msg:
                key = (frame.direction, key_id)
                assert key not in pending, f"id {key_id} reused while pending at seq {frame.seq}"
                pending[key] = frame
            elif "method" not in msg:
                caller = A2C if frame.direction == C2A else C2A
                request = pending.pop((caller, key_id), None)
                assert request is not None, self._orphan(frame, caller, key_id)
                assert frame.request_seq == request.seq, (
                    f"seq {frame.seq} answers the {caller} request at seq {request.seq}, "
                    f"but the recording pairs it with seq {frame.request_seq}"
                )
                calls.append(
                    RpcCall(
                        caller=caller,
                        id=msg["id"],
                        method=request.message["method"],
                        request_seq=request.seq,
                        response_seq=frame.seq,
                        response=msg,
                    )
                )
        assert not pending, f"requests without a response: {sorted(pending)}"
        return sorted(calls, key=lambda call: call.request_seq)

    def _orphan(self, response: Frame, caller: Direction, key_id: str) -> str:
        """Explains a response that no earlier request explains."""
        for frame in self.frames:
            if frame.seq > response.seq and frame.direction == caller:
                msg = frame.message
                if "method" in msg and json.dumps(msg.get("id")) == key_id:
                    return (
                        f"seq order is not causal: the {response.direction} response to id "
                        f"{key_id} has seq {response.seq}, before its {caller} request "
                        f"(seq {frame.seq}, {msg['method']})"
                    )
        return f"seq {response.seq}: a response to no request: {response.raw!r}"

    def assert_connection_facts(self) -> None:
        """The connection row repeats what the initialize exchange said."""
        request = next(m for m in self.messages(C2A) if m.get("method") == "initialize")
        call = next(c for c in self.rpc_calls() if c.method == "initialize")
        result = call.response["result"]
        facts = self.connection
        assert facts["protocol_version"] == result["protocolVersion"]
        assert _json_or_none(facts["client_info"]) == request["params"].get("clientInfo")
        assert _json_or_none(facts["agent_info"]) == result.get("agentInfo")


def _json_or_none(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True)
class PeerRun:
    """What one run produced: the client's own output, the taps and the recording."""

    spec: RunSpec
    returncode: int
    stdout: bytes
    stderr: bytes
    workdir: Path

    @property
    def client_side(self) -> TapLog:
        return TapLog.read(self.workdir / "client-side")

    @property
    def agent_side(self) -> TapLog:
        return TapLog.read(self.workdir / "agent-side")

    @property
    def db(self) -> Path:
        return self.workdir / "recording.sqlite"

    def assert_taps_agree(self) -> None:
        """The bytes on both sides of the middle are identical, direction by direction."""
        outer, inner = self.client_side, self.agent_side
        assert outer.c2a, "the client sent nothing"
        assert outer.a2c, "the agent sent nothing"
        assert inner.c2a == outer.c2a, "client->agent bytes differ across the middle"
        assert inner.a2c == outer.a2c, "agent->client bytes differ across the middle"
        assert inner.stderr == outer.stderr, "agent stderr differs across the middle"
        assert exit_code(outer.status) == exit_code(inner.status), (
            f"middle exited {outer.status}, agent {inner.status}"
        )

    def assert_recording_exact(self) -> Recording:
        """The database holds exactly the bytes that crossed, every frame one whole line."""
        recording = Recording.read(self.db)
        side = self.client_side
        assert recording.stream(C2A) == side.c2a, "recorded client->agent bytes differ"
        assert recording.stream(A2C) == side.a2c, "recorded agent->client bytes differ"
        assert recording.stream(STDERR) == self.agent_side.stderr, "recorded stderr differs"
        for frame in recording.frames:
            if frame.direction in (C2A, A2C):
                assert frame.raw.endswith(b"\n"), f"seq {frame.seq}: not a whole line"
                assert frame.raw.count(b"\n") == 1, f"seq {frame.seq}: more than one line"
        return recording


def exit_code(status: int) -> int:
    """Popen's -N (killed by signal N) as a shell would show it: 128 + N."""
    return 128 - status if status < 0 else status


def run_peers(spec: RunSpec, workdir: Path) -> PeerRun:
    workdir.mkdir(parents=True)
    agent = spec.agent
    if spec.middle is not None:
        agent = tap(workdir / "agent-side", agent)
        if spec.middle is Middle.PROXY:
            agent = proxy(workdir / "recording.sqlite", agent)
        agent = tap(workdir / "client-side", agent)
    launch = spec.client(agent, workdir)
    with started(
        launch.argv,
        cwd=spec.cwd,
        env=run_env(launch.env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # one process group to clean up if the run hangs
    ) as client:
        try:
            # Returns at EOF of stdout and stderr, i.e. when every process of the run is gone.
            stdout, stderr = client.communicate(spec.stdin, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(client.pid, signal.SIGKILL)
            stdout, stderr = client.communicate()
            pytest.fail(
                f"{spec.name}: no end after {RUN_TIMEOUT_S}s\n"
                f"stdout: {stdout.decode(errors='replace')}\n"
                f"stderr: {stderr.decode(errors='replace')}"
            )
    return PeerRun(spec, client.returncode, stdout, stderr, workdir)


RunPair = Callable[[ClientFactory, list[str], bytes, Middle, Path], tuple[PeerRun, PeerRun]]


@pytest.fixture
def run_pair(tmp_path: Path) -> RunPair:
    """Runs a client/agent pair twice at the same time: directly, and with MIDDLE between taps.

    Returns ``(direct, tapped)``. The two runs are independent, so running them together halves
    the wall time (the TypeScript agent sleeps about five seconds per prompt).
    """

    def run(
        client: ClientFactory, agent: list[str], stdin: bytes, middle: Middle, cwd: Path
    ) -> tuple[PeerRun, PeerRun]:
        specs = [
            RunSpec("direct", client, agent, stdin, None, cwd),
            RunSpec("tapped", client, agent, stdin, middle, cwd),
        ]
        with ThreadPoolExecutor(max_workers=len(specs)) as pool:
            futures = [pool.submit(run_peers, spec, tmp_path / spec.name) for spec in specs]
            direct, tapped = (future.result() for future in futures)
        return direct, tapped

    return run
