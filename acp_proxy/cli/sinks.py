"""The recorder's sinks, listed in one place: what follows a recording batch by batch.

Rules:
- The command line composes the recorder (as mitmproxy lists its addons in one place): every
  sink a recording can have is made here, from the recording's settings, and handed to the
  recorder process; record/ knows only the ``RecordSink`` protocol, never a sink itself.
- Made in the recorder process (the factory is handed over before the fork): the proxy
  process never imports a sink, so forwarding never pays for one.
- A sink that cannot start says why in one line and the recording goes on without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from acp_proxy.stderr import Reporter

if TYPE_CHECKING:
    from acp_proxy.record.recorder import RecordSink


def recorder_sinks(
    settings: Mapping[str, Any], connection: Mapping[str, Any], report: Reporter,
    set_connection: Callable[..., None],
) -> list[RecordSink]:  # fmt: skip
    """The sinks of one connection's recording (``record.recorder.SinkFactory``)."""
    sinks: list[RecordSink] = []
    if settings.get("otlp") is not None:  # record --otlp: spans exported live
        from acp_proxy.otel.live import start_live_export

        live = start_live_export(settings["otlp"], dict(connection), report, set_connection)
        if live is not None:
            sinks.append(live)
    return sinks
