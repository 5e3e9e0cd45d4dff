"""Sans-I/O: the three ways replay runs, as its one I/O shell sees them (replay/shell/loop.py).

Rules:
- The shell knows one interface, ``Conversation``: the client's and the agent's frames and ends
  come in with their monotonic time; ``stop`` says what the shell decided (a signal, a client
  that went away or stopped reading, an agent whose output did not end); ``agent_stalled`` an
  agent that stopped reading its stdin; ``step(now)`` says what to do now (``Actions``: bytes
  for each side, whether the agent is wanted and when its stdin may close, when to call again
  at the latest, whether the run is over).
- ``ForClient`` serves a client from one recording (engine.Replay); ``ForEpisodes`` from several
  episodes, going live with a real agent when the engine asks (episodes.Episodes); ``ForAgent``
  plays the recorded client to an agent (drive.Drive): an agent and no client.
- A wait the conversation itself bounds (a frame the recording expects) is decided here from
  the clock passed in, and surfaces as ``wake_at``; the shell bounds only its own waits (a side
  that stopped taking bytes, an agent that outlives its grace, a signal's grace).
- Pure: no clock, descriptor or process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:  # each caller imports the engine it runs, and only that one
    from acp_proxy.replay.drive import Drive
    from acp_proxy.replay.engine import Replay
    from acp_proxy.replay.episodes import Episodes


class Actions(NamedTuple):
    to_client: bytes
    to_agent: bytes
    wake_at: int | None  # call step() again by then (None: only when something happens)
    wants_agent: bool  # the agent must run (started once, the first time this is true)
    close_agent: bool  # close the agent's stdin once what was queued for it is written
    done: bool  # the conversation is over: write what is queued for the client, then end


class Conversation(Protocol):
    has_client: bool

    def client_frame(self, raw: bytes, now: int) -> None: ...
    def client_closed(self, now: int) -> None: ...
    def agent_frame(self, raw: bytes, now: int) -> None: ...
    def agent_closed(self, now: int) -> None: ...
    def agent_failed(self, reason: str) -> None: ...
    def agent_stalled(self, seconds: float) -> None: ...
    def stop(self, reason: str) -> None: ...
    def step(self, now: int) -> Actions: ...


class ForClient:
    """A client served from one recording; no agent."""

    has_client = True

    def __init__(self, replay: Replay) -> None:
        self.replay = replay

    def client_frame(self, raw: bytes, now: int) -> None:
        self.replay.receive(raw, now)

    def client_closed(self, now: int) -> None:
        self.replay.client_closed(now)

    def agent_frame(self, raw: bytes, now: int) -> None:
        """Never called: this conversation never wants an agent."""

    def agent_closed(self, now: int) -> None:
        """Never called: this conversation never wants an agent."""

    def agent_failed(self, reason: str) -> None:
        """Never called: this conversation never wants an agent."""

    def agent_stalled(self, seconds: float) -> None:
        """Never called: this conversation never wants an agent."""

    def stop(self, reason: str) -> None:
        self.replay.stop(reason)

    def step(self, now: int) -> Actions:
        out, wake_at, done = self.replay.advance(now)
        return Actions(out, b"", wake_at, False, False, done)


class ForEpisodes:
    """A client served from several episodes, and from a real agent once the engine goes live."""

    has_client = True

    def __init__(self, engine: Episodes) -> None:
        self.engine = engine

    def client_frame(self, raw: bytes, now: int) -> None:
        self.engine.receive(raw, now)

    def client_closed(self, now: int) -> None:
        self.engine.client_closed(now)

    def agent_frame(self, raw: bytes, now: int) -> None:
        self.engine.agent_frame(raw, now)

    def agent_closed(self, now: int) -> None:
        self.engine.agent_closed()

    def agent_failed(self, reason: str) -> None:
        self.engine.agent_failed(reason)

    def agent_stalled(self, seconds: float) -> None:
        self.engine.stop(f"the agent read nothing for {seconds:g}s")

    def stop(self, reason: str) -> None:
        self.engine.stop(reason)

    def step(self, now: int) -> Actions:
        engine = self.engine
        out, wake_at, done = engine.advance(now)
        wants = engine.wants_agent
        to_agent = engine.to_agent() if wants else b""
        return Actions(out, to_agent, wake_at, wants, engine.close_agent, done)


class ForAgent:
    """The recorded client played to an agent; no client.

    Nothing from the agent for ``timeout_ns`` while a frame is expected is a divergence (the
    drive's timeout). Once every recorded frame was sent and matched, the agent's stdin closes
    and the run ends with its output (or with the shell's grace): a frame it sends meanwhile is
    one the recording does not have.
    """

    has_client = False

    def __init__(self, drive: Drive, timeout_ns: int, now: int) -> None:
        self.drive, self.timeout_ns = drive, timeout_ns
        self.since = now  # the last time the agent was sent or sent something
        self.ending: str | None = None  # why the shell stopped the run, if it did
        self.spawn_failure: str | None = None  # why the agent could not start, if it did not
        self.agent_gone = False

    def client_frame(self, raw: bytes, now: int) -> None:
        """Never called: there is no client."""

    def client_closed(self, now: int) -> None:
        """Never called: there is no client."""

    def agent_frame(self, raw: bytes, now: int) -> None:
        self.since = now
        self.drive.receive(raw)

    def agent_closed(self, now: int) -> None:
        self.agent_gone = True
        self.drive.agent_closed()

    def agent_failed(self, reason: str) -> None:
        if self.spawn_failure is None:
            self.spawn_failure = reason

    def agent_stalled(self, seconds: float) -> None:
        self.drive.timed_out(seconds)
        if self.drive.divergence is None:
            self.stop(f"the agent read nothing for {seconds:g}s")

    def stop(self, reason: str) -> None:
        if self.ending is None:
            self.ending = reason

    def step(self, now: int) -> Actions:
        drive = self.drive
        over = self.ending is not None or self.spawn_failure is not None or self.agent_gone
        if over or drive.divergence is not None:
            return Actions(b"", b"", None, True, False, True)
        to_agent = drive.outgoing()
        if to_agent:
            self.since = now
        wake_at = None
        if drive.expected is not None:
            wake_at = self.since + self.timeout_ns
            if now >= wake_at:
                drive.timed_out(self.timeout_ns / 1e9)
                return Actions(b"", to_agent, None, True, False, True)
        return Actions(b"", to_agent, wake_at, True, drive.done, False)
