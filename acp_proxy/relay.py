"""The relay: the lifetime of one proxied agent, under one anyio task group.

Rules:
- The forwarding threads (forward.py) are already moving bytes when the relay starts, and
  signals are already passed on to the agent (spawn.py); the relay's task group owns the reaper
  and the shutdown timer, and waits for the forwarding threads.
- Lifecycle: on client EOF (forward.py closes the agent's stdin), if the agent has not exited
  after ``grace`` seconds, SIGTERM its process group, then SIGKILL after ``grace`` more. When
  the agent has exited, its stdout and stderr are drained (a grandchild holding them gets
  ``drain`` seconds), then whatever still blocks is stopped.
- The result is how the agent ended (``AgentExit``); the proxy exits with its status.
- The proxy's own words go to the ``report`` callback (stderr), never to stdout.
"""

from __future__ import annotations

import signal
import subprocess

import anyio
import anyio.to_thread

from .forward import Forwarding
from .spawn import DEFAULT_GRACE, AgentExit, signal_group
from .stderr import Reporter


async def relay(
    process: subprocess.Popen[bytes],
    forwarding: Forwarding,
    report: Reporter,
    *,
    grace: float = DEFAULT_GRACE,
    drain: float = 2.0,
) -> AgentExit:
    """Run until the agent has exited and every forwarding thread has ended."""
    exited = anyio.Event()

    async def reap() -> None:
        await anyio.to_thread.run_sync(process.wait)
        exited.set()

    async def end_after_client_eof() -> None:
        # Abandoned on cancel: the wait ends by itself once forwarding has stopped.
        await anyio.to_thread.run_sync(forwarding.client_eof.wait, abandon_on_cancel=True)
        if exited.is_set():
            return
        with anyio.move_on_after(grace):
            await exited.wait()
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if exited.is_set():
                return
            report(f"the agent did not exit {grace:g}s after its stdin closed: sending "
                   f"{signal.Signals(signum).name}")  # fmt: skip
            signal_group(process, signum)
            with anyio.move_on_after(grace):
                await exited.wait()

    async with anyio.create_task_group() as group:
        group.start_soon(reap)
        group.start_soon(end_after_client_eof)
        await exited.wait()
        await anyio.to_thread.run_sync(forwarding.wait_for_outputs, drain)
        # The agent is gone: whatever still blocks (a client that keeps stdin open, a
        # grandchild holding the agent's stdout) is told to stop; the loops then return.
        await anyio.to_thread.run_sync(forwarding.stop)
        group.cancel_scope.cancel()
    returncode = process.returncode
    assert returncode is not None
    return AgentExit(returncode)
