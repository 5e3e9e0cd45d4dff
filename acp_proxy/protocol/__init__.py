"""Sans-I/O protocol knowledge: framing, JSON-RPC, ACP vocabulary, observer, normalization, diff.

Rules: nothing here touches a file, a process, a clock or a database (no os, select, sqlite3,
subprocess, anyio, click); peer bytes either parse or become a value saying why not, never an
exception; a frame's meaning is computed once, by the observer, and read everywhere else.
"""
