"""Servers that hand recordings to other programs: the MCP server for coding agents (``mcp``)
and the web inspector for people (``ui``).

Rules: read-only towards recordings (the search index's upkeep aside); they bind nothing but
stdio or loopback (``ui --host`` aside, with a warning); everything they hand out is bounded
and, for the MCP server unless told otherwise, redacted.
"""
