"""A benchmark wrapper: run a command beside a busy loop, to see what spare CPU is worth.

    python -m tests.perf.idle_spinner [--class idle|normal] [--seconds S] -- COMMAND...

The busy loop is a separate process that spins for ``--seconds`` (default: as long as the
command runs), in Linux's idle scheduling class (``SCHED_IDLE``, the class the recorder's
recording thread uses) or at normal priority. Wrapping ``relay-only`` with it shows whether
work in the idle class is free for the conversation on this machine: on a machine with truly
spare cores it is; on the project's 2-vCPU VM it was not (docs/performance.md).

Not a product feature.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time


def _spin(scheduling_class: str, seconds: float) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the command's stdin and stdout are the conversation: stay off them
        os.dup2(null, fd)
    if scheduling_class == "idle":
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--class", dest="scheduling_class", choices=("idle", "normal"),
                        default="idle")  # fmt: skip
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("command", nargs="+")
    options = parser.parse_args(args)
    spinner = os.fork()
    if spinner == 0:
        try:
            _spin(options.scheduling_class, options.seconds)
        finally:
            os._exit(0)
    try:
        return subprocess.run(options.command, check=False).returncode
    finally:
        os.kill(spinner, signal.SIGKILL)
        os.waitpid(spinner, 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
