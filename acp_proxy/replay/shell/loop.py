"""Replay's I/O shell on anyio: ``replay --to-agent``, ``--go-live`` and cassettes run in it.

Rules:
- One anyio event loop, one task that decides (``Shell._run``): it feeds what the sides read
  to the conversation (replay/modes.py: events and the clock in, actions out), hands the
  bytes the conversation returns to the sides (ports.py), and waits for the next event. The
  sides' tasks only read and write.
- A plain replay (a client served from one recording, no agent) runs in plain.py instead: the
  same decisions (common.py) without an event loop to start.
- The client side exists when the conversation has a client (fds 0 and 1, never changed: see
  ports.py); the agent side once the conversation wants the agent (``anyio.open_process``, its
  own process group). An agent that cannot start is the conversation's to handle.
- SIGINT, SIGTERM and SIGHUP come through ``anyio.open_signal_receiver``, from before the agent
  starts until it has exited: each is passed on to the agent's process group at once and stops
  the conversation (``ended by SIGTERM``); from the first one, the run has the grace to end,
  then the agent gets SIGKILL. The outcome names the signal (the caller's exit status).
- Every timeout is decided in one place, ``Decisions.timeouts`` (common.py, shared with the
  plain shell), and waited for as one cancel scope around the wait for the next event: the
  conversation's own ``wake_at``; a side that
  took none of the bytes waiting for it for ``timeout_ns`` (the client: stopped; the agent:
  ``agent_stalled``); an agent whose output has not ended ``grace_ns`` after its stdin was
  closed; the grace after a signal.
- The run ends when the conversation is done and the client has taken what was queued for it
  (or the client is gone, or stalled, or a signal's grace is over). The agent then has its
  stdin closed and the grace, then SIGTERM to its group and the grace again, then SIGKILL.
- stdout carries nothing but protocol bytes; our own words go to stderr, and only the caller
  writes them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from acp_proxy.record.spawn import SpawnFailed
from acp_proxy.replay.modes import Conversation
from acp_proxy.replay.shell.common import (
    NO_AGENT,
    STOPPING,
    Decisions,
    Event,
    Log,
    Outcome,
    Signalled,
)
from acp_proxy.replay.shell.ports import AgentPort, ClientPort, Inbox

if TYPE_CHECKING:  # only --record brings the tap in
    from acp_proxy.record.tap import Tap

__all__ = ["STOPPING", "Outcome", "Shell", "serve"]


def serve(
    conversation: Conversation, timeout_ns: int, grace_ns: int, *,
    agent_argv: Sequence[str] | None = None, tap: Tap | None = None, agent_log: Log | None = None,
    stdin_fd: int = 0, stdout_fd: int = 1,
) -> Outcome:  # fmt: skip
    """Run ``conversation`` to its end (see the module rules).

    ``tap`` records the client's side (``--record``); ``agent_log`` sees what crosses the
    agent's pipes.
    """
    shell = Shell(conversation, timeout_ns, grace_ns, agent_argv, tap, agent_log)
    return anyio.run(shell.run, stdin_fd, stdout_fd)


class Shell(Decisions):
    def __init__(
        self, conversation: Conversation, timeout_ns: int, grace_ns: int,
        agent_argv: Sequence[str] | None, tap: Tap | None, agent_log: Log | None,
    ) -> None:  # fmt: skip
        super().__init__(conversation, timeout_ns, grace_ns)
        self.agent_argv, self.tap, self.agent_log = agent_argv, tap, agent_log
        self.client: ClientPort | None = None
        self.agent: AgentPort | None = None
        self.no_agent = False  # it was wanted and could not start

    async def run(self, stdin_fd: int, stdout_fd: int) -> Outcome:
        inbox, events = anyio.create_memory_object_stream[Event](math.inf)
        returncode = None
        with events, inbox, anyio.open_signal_receiver(*STOPPING) as signals:
            async with anyio.create_task_group() as tasks:

                async def receive_signals() -> None:
                    async for signum in signals:
                        inbox.send_nowait(Signalled(signum))

                tasks.start_soon(receive_signals)
                if self.conversation.has_client:
                    self.client = ClientPort(stdin_fd, stdout_fd, self.tap, inbox)
                    tasks.start_soon(self.client.read)
                    tasks.start_soon(self.client.write)
                try:
                    await self._run(events, inbox, tasks)
                finally:
                    if self.agent is not None:
                        with anyio.CancelScope(shield=True):
                            returncode = await self._end_agent(events)
                    tasks.cancel_scope.cancel()
        signum = self.signalled[0] if self.signalled else None
        return Outcome(signum, returncode)

    async def _run(
        self, events: MemoryObjectReceiveStream[Event], inbox: Inbox,
        tasks: anyio.abc.TaskGroup,
    ) -> None:  # fmt: skip
        conversation, client = self.conversation, self.client
        while True:
            now = time.monotonic_ns()
            actions = conversation.step(now)
            if actions.wants_agent and self.agent is None and not self.no_agent:
                await self._start_agent(inbox, tasks)
                self.hand_out(actions, now)
                continue  # the conversation sees at once whether it started
            self.hand_out(actions, now)
            if client is not None and client.gone:
                conversation.stop("the client closed its end of the connection")
                return
            if actions.done:
                if client is not None:
                    client.reading.cancel()
                if client is None or not client.pending:
                    return
            end, deadline = self.timeouts(now, actions.wake_at)
            if end:
                return
            with anyio.CancelScope(deadline=deadline / 1e9):
                self.handle(await events.receive())
                while True:  # what else came meanwhile, before the next step
                    try:
                        event = events.receive_nowait()
                    except anyio.WouldBlock:
                        break
                    self.handle(event)

    async def _start_agent(self, inbox: Inbox, tasks: anyio.abc.TaskGroup) -> None:
        if not self.agent_argv:
            self.no_agent = True
            self.conversation.agent_failed(NO_AGENT)
            return
        try:
            self.agent = await AgentPort.start(self.agent_argv, self.agent_log, inbox)
        except SpawnFailed as error:
            self.no_agent = True
            self.conversation.agent_failed(str(error))
            return
        tasks.start_soon(self.agent.serve)

    async def _end_agent(self, events: MemoryObjectReceiveStream[Event]) -> int:
        """The agent's end (see ``AgentPort.end``); signals still go to its group meanwhile."""
        agent = self.agent
        assert agent is not None
        signalled_at = None if self.signalled is None else self.signalled[1] / 1e9

        async def pass_signals() -> None:
            async for event in events:
                if isinstance(event, Signalled):
                    agent.signal(event.signum)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(pass_signals)
            returncode = await agent.end(self.grace_ns / 1e9, signalled_at)
            tasks.cancel_scope.cancel()
        return returncode
