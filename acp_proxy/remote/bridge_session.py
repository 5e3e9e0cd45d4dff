"""``record --connect``: one bridged connection, from the recorder's fork to its last commit.

Rules:
- The recorder process is forked first (record/recording.py, the one recording pipeline),
  before the event loop, httpx or websockets are imported, so that it carries none of them.
- The recorded agent command (and ``remote_url``) is the URL as bridge_headers.recorded_url
  gives it; the connection's transport is ``stdio`` (its frames are the stdio side's lines);
  the client's command line is recorded with every ``--header`` value scrubbed. Header values
  are never recorded.
- The exit status is the bridge's (bridge.py): 0 when the client ended, 1 when the remote end
  failed; the recording is finished with it, as ``record`` finishes with the agent's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from acp_proxy.record.defaults import DEFAULT_GRACE, DEFAULT_MAX_WAIT
from acp_proxy.record.recording import FLUSH_DEADLINE, Recording, client_command
from acp_proxy.remote.bridge_headers import recorded_url, scrub_header_values
from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from acp_proxy.record.recorder import SinkFactory


@dataclass(frozen=True, slots=True)
class BridgeOptions:
    url: str
    transport: str  # "http" or "ws" (bridge_headers.transport_of)
    headers: Sequence[tuple[str, str]]
    db_path: Path
    label: str | None = None
    grace: float = DEFAULT_GRACE
    check: bool = False
    otlp: dict[str, object] | None = None
    max_recorder_wait: float = DEFAULT_MAX_WAIT
    flush_deadline: float = FLUSH_DEADLINE
    sinks: SinkFactory | None = None  # the command line's sinks (cli/sinks.py)


def record_bridge(options: BridgeOptions, report: Reporter) -> int:
    """Bridge the client on fds 0 and 1 to ``options.url``, recorded; the exit status."""
    client_argv = client_command()
    shown = recorded_url(options.url)
    recording = Recording.start(
        options.db_path, [shown], report, label=options.label, remote_url=shown,
        check=options.check, otlp=options.otlp, max_wait=options.max_recorder_wait,
        sinks=options.sinks,
        client_argv=None if client_argv is None else scrub_header_values(client_argv),
    )  # fmt: skip
    from acp_proxy.remote.bridge import run_bridge  # after the fork: the recorder stays small

    status = 1
    try:
        status = run_bridge(
            options.url, options.transport, options.headers, options.grace, report,
            recording.tap,
        )  # fmt: skip
    finally:
        recording.finish(exit_code=status, deadline=options.flush_deadline)
    return status
