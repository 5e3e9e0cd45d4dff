"""Servers that hand recordings to other programs (the MCP server for coding agents).

Rules: read-only towards recordings (the search index's upkeep aside); they bind nothing but
stdio or loopback; everything they hand out is bounded and, unless told otherwise, redacted.
"""
