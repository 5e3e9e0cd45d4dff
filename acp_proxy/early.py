"""An agent started before the command line was parsed (see entry.py), waiting to be claimed.

Rules:
- ``start_early`` spawns the agent and passes signals on to it at once; a spawn failure is kept
  to be reported by ``record`` once it knows where the database is.
- ``claim`` hands the process (or the failure) to ``record`` if the command matches, once.
- ``abandon`` kills an agent nobody claimed (its process group, then reaps it); it does nothing
  after a claim.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence

from .spawn import SpawnFailed, pass_signals_to, signal_group, spawn_agent


class EarlyAgent:
    __slots__ = ("_claimed", "argv", "failure", "process")

    def __init__(
        self,
        argv: Sequence[str],
        process: subprocess.Popen[bytes] | None,
        failure: SpawnFailed | None,
    ) -> None:
        self.argv = list(argv)
        self.process = process
        self.failure = failure
        self._claimed = False

    def claim(self, argv: Sequence[str]) -> EarlyAgent | None:
        """This early start, if it is for ``argv`` and not yet claimed."""
        if self._claimed or list(argv) != self.argv:
            return None
        self._claimed = True
        return self

    def abandon(self) -> None:
        if self._claimed or self.process is None:
            return
        self._claimed = True
        signal_group(self.process, signal.SIGKILL)
        self.process.wait()


def start_early(argv: Sequence[str]) -> EarlyAgent:
    try:
        process = spawn_agent(argv)
    except SpawnFailed as failure:
        return EarlyAgent(argv, None, failure)
    pass_signals_to(process)
    return EarlyAgent(argv, process, None)
