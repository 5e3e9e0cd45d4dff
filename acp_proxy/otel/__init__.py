"""OpenTelemetry export of recordings: spans.py maps frames to spans (sans-I/O), export.py sends
them over OTLP/HTTP with the OpenTelemetry SDK (the optional ``otel`` extra), live.py follows a
recording as it is written (a recorder sink). docs/otel.md describes the span model.

Rules:
- Importing this package costs nothing: ``missing_extra`` only looks for the SDK's modules, so
  the command line can ask before the agent is launched.
"""

from __future__ import annotations

import importlib.util

EXTRA_MODULES = ("opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter")
MISSING_EXTRA = "OTLP export needs the otel extra: pip install 'acp-proxy[otel]'"


def missing_extra() -> str | None:
    """One line saying what to install, or None when the SDK is there."""
    for name in EXTRA_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return MISSING_EXTRA
    return None
