"""Demo ACP peers for ``acp-proxy demo``: a scripted agent and an auto-approving client.

Rules:
- Both peers are built on the official ACP Python SDK (``agent-client-protocol``, the ``demo``
  extra) through its public API only: ``acp`` and ``acp.schema``, never private modules.
- They are ordinary ACP programs that know nothing about the proxy: the proxy must treat them
  like any third-party agent or client.
- Everything they say is deterministic, so recordings of a demo run are reproducible.
- Importing this package imports nothing from the SDK; only ``agent`` and ``client`` do.
"""

from __future__ import annotations

import acp_proxy

AGENT_NAME = "acp-proxy-demo-agent"
CLIENT_NAME = "acp-proxy-demo-client"
AGENT_MODULE = "acp_proxy.demo.agent"
CLIENT_MODULE = "acp_proxy.demo.client"


def demo_version() -> str:
    """The version both peers report: ``acp_proxy.__version__`` when it exists, else 0.1.0."""
    version = getattr(acp_proxy, "__version__", None)
    return version if isinstance(version, str) else "0.1.0"


__all__ = ["AGENT_MODULE", "AGENT_NAME", "CLIENT_MODULE", "CLIENT_NAME", "demo_version"]
