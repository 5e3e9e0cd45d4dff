"""The relay: the lifetime of one proxied agent, on the main thread and one watcher thread.

Rules:
- The forwarding threads (forward.py) are already moving bytes when the relay starts, and
  signals are already passed on to the agent (spawn.py). The main thread waits for the agent
  to exit (the signal handlers run there, between retries of that wait); a watcher thread
  handles the client's end of file. The relay then waits for the forwarding threads.
- Lifecycle: on client EOF (forward.py closes the agent's stdin), if the agent has not exited
  after ``grace`` seconds, SIGTERM its process group, then SIGKILL after ``grace`` more. When
  the agent has exited, its stdout and stderr are drained (a grandchild holding them gets
  ``drain`` seconds), then whatever still blocks is stopped. No thread is left behind: stopping
  the forwarding ends the client-side loop, which releases the watcher.
- Plain threads, not an event loop: the lifetime is a handful of waits, and the proxy process
  is the one place where every microsecond of every round trip counts. An event loop here
  costs round-trip latency and memory (measured: docs/performance.md), so record/ never
  imports anyio or asyncio (tests/test_layering.py).
- The result is how the agent ended (``AgentExit``); the proxy exits with its status.
- The proxy's own words go to the ``report`` callback (stderr), never to stdout.
"""

from __future__ import annotations

import signal
import subprocess
import threading

from acp_proxy.record.defaults import DEFAULT_GRACE
from acp_proxy.record.forward import Forwarding
from acp_proxy.record.spawn import AgentExit, signal_group
from acp_proxy.stderr import Reporter


def relay(
    process: subprocess.Popen[bytes],
    forwarding: Forwarding,
    report: Reporter,
    *,
    grace: float = DEFAULT_GRACE,
    drain: float = 2.0,
) -> AgentExit:
    """Run until the agent has exited and every forwarding thread has ended."""
    exited = threading.Event()

    def end_after_client_eof() -> None:
        forwarding.client_eof.wait()
        if exited.wait(grace):
            return
        for signum in (signal.SIGTERM, signal.SIGKILL):
            report(f"the agent did not exit {grace:g}s after its stdin closed: sending "
                   f"{signal.Signals(signum).name}")  # fmt: skip
            signal_group(process, signum)
            if exited.wait(grace):
                return

    watcher = threading.Thread(target=end_after_client_eof, name="acp-proxy lifetime")
    watcher.start()
    try:
        returncode = process.wait()
    finally:
        exited.set()
        forwarding.wait_for_outputs(drain)
        # The agent is gone: whatever still blocks (a client that keeps stdin open, a
        # grandchild holding the agent's stdout) is told to stop; the loops then return, and
        # the client-side loop's end releases the watcher.
        forwarding.stop()
        watcher.join()
    return AgentExit(returncode)
