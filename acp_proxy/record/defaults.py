"""The defaults of ``record``'s options, in a module that imports nothing.

Rules: the command line shows these in its help and entry.py reads them for the early launch;
neither may pay for importing the forwarding code (subprocess, threads, the shared-memory tap)
just to know a number. spawn.py and tap.py use the same values.
"""

from __future__ import annotations

DEFAULT_GRACE = 5.0  # seconds the agent gets to exit after the client closed its stdin
DEFAULT_MAX_WAIT = 1.0  # seconds forwarding waits for a recorder that is behind
