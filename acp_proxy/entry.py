"""The ``acp-proxy`` console entry point: ``record`` starts its agent before anything slow.

Rules:
- For ``acp-proxy record [OPTIONS] -- AGENT...`` the agent is spawned first, before the
  command-line library and everything else is imported (tens of milliseconds the client would
  otherwise wait for ``initialize``), and signals are passed on to it from that moment.
- Only the unambiguous form is started early: ``record`` first, a ``--`` with a command after
  it, and no ``--help``/``-h``/``--version`` before the ``--``. Everything else goes through the
  command line as usual.
- The command line then parses the options as always; ``record`` takes the early agent over
  if it is the same command. If the command line stops first (a usage error), the early agent
  is killed: nothing is left behind.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .early import EarlyAgent, start_early


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    early: EarlyAgent | None = None
    if args[:1] == ["record"] and "--" in args:
        options, agent = args[1 : args.index("--")], args[args.index("--") + 1 :]
        if agent and not {"--help", "-h", "--version"} & set(options):
            early = start_early(agent)
    try:
        from .cli import main as command_line

        command_line(args=args, obj=early)
    finally:
        if early is not None:
            early.abandon()
