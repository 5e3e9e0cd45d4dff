"""A benchmark wrapper: acp-proxy's relay without its recorder.

    python -m tests.perf.relay_only -- AGENT [ARGS...]

It spawns the agent and forwards its stdin, stdout and stderr with the project's own code
(acp_proxy.record.spawn, acp_proxy.record.forward: the same threads, buffers and reads as
``record``), but
hands every chunk to a tap that drops it: no recorder process, no ring, no SQLite. So in one
benchmark run:

- ``acp-proxy`` minus ``relay-only`` is what recording costs the conversation;
- ``relay-only`` minus ``direct`` is what one hop through a Python relay costs, which no
  change to the recorder can win back on this design.

Not a product feature: it records nothing and has only the lifecycle a benchmark needs (the
agent ends when the client closes its stdin).
"""

from __future__ import annotations

import os
import sys

from acp_proxy.protocol.acp import Direction
from acp_proxy.record.forward import Forwarding
from acp_proxy.record.spawn import pass_signals_to, spawn_agent
from acp_proxy.record.tap import Tap
from acp_proxy.stderr import report


class DroppingTap(Tap):
    """A tap that drops what it is given (the forwarding threads call it all the same)."""

    def __init__(self) -> None:
        super().__init__(os.open(os.devnull, os.O_WRONLY))

    def put_view(self, direction: Direction, mono_ns: int, chunk: memoryview) -> None:
        return None


def main(args: list[str]) -> int:
    agent = args[1:] if args[:1] == ["--"] else args
    if not agent:
        report("usage: python -m tests.perf.relay_only -- AGENT [ARGS...]")
        return 2
    process = spawn_agent(agent)
    pass_signals_to(process)
    forwarding = Forwarding(process, DroppingTap(), report)
    status = process.wait()
    forwarding.wait_for_outputs(2.0)
    forwarding.stop()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
