"""``acp-proxy record`` in front of the fake agent (tests/support/agents/fake_agent.py), as the
record tests start it: the command line, and a process with all three pipes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FAKE_AGENT = str(Path(__file__).parent / "agents" / "fake_agent.py")


def proxy_argv(db: Path, *agent: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        sys.executable, "-m", "acp_proxy", "record", "--db", str(db), *extra, "--",
        sys.executable, FAKE_AGENT, *agent,
    ]  # fmt: skip


def start(argv: list[str], **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs
    )  # type: ignore[call-overload]
