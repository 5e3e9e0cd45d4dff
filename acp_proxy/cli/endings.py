"""How a command ends on one of our own errors: the one line said, and the exit status.

Rules:
- A REF or file that cannot be used, or a SQLite error met reading a recording, is the user's
  to mend: exit 2. Any other error of ours: exit 1. Anything else is a bug and is raised.
- Imports neither click nor the store at import time: replay's early path (replay_plain.py)
  ends its errors here before click is ever loaded, exactly as the command line does.
"""

from __future__ import annotations

from acp_proxy.errors import AcpProxyError, BadReference
from acp_proxy.stderr import report

EXIT_USAGE = 2


def said_and_status(error: Exception) -> int | None:
    """Say ``error`` in one line and give the exit status it ends the command with; None (and
    nothing said) when it is not one of ours."""
    from acp_proxy.store.failures import unreadable

    if isinstance(error, BadReference):
        report(str(error))
        return EXIT_USAGE
    if isinstance(error, AcpProxyError):
        report(str(error))
        return 1
    damaged = unreadable(error)
    if damaged is None:
        return None
    report(str(damaged))
    return EXIT_USAGE
