"""``acp-proxy mcp``: recordings as Model Context Protocol tools for coding agents.

Rules: ``library`` does the work (sans MCP: plain values in, JSON-ready dicts out),
``copies`` keeps the redacted copies it reads, ``bounds`` keeps every result under a byte
cap, ``server`` wires the tools onto the official ``mcp`` SDK (the only module importing it).
"""
