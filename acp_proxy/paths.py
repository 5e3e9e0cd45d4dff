"""Where acp-proxy keeps things on disk.

Rules:
- Recordings go to one SQLite file in the per-user data folder (XDG Base Directory:
  ``$XDG_DATA_HOME/acp-proxy/recordings.sqlite``, ``~/.local/share/...`` when unset).
- ``--db`` beats ``ACP_PROXY_DB`` beats the default; click applies that order, this module only
  computes the default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

DB_ENV = "ACP_PROXY_DB"
DB_FILE_NAME = "recordings.sqlite"


def data_home(environ: Mapping[str, str] = os.environ) -> str:
    configured = environ.get("XDG_DATA_HOME", "")
    # The spec says a relative XDG path is invalid and must be ignored.
    if configured and os.path.isabs(configured):
        return configured
    return os.path.join(os.path.expanduser("~"), ".local", "share")


def default_db_file(environ: Mapping[str, str] = os.environ) -> str:
    """The default database as a string (pathlib is slow to import before the agent starts)."""
    return os.path.join(data_home(environ), "acp-proxy", DB_FILE_NAME)


def default_db_path(environ: Mapping[str, str] = os.environ) -> Path:
    from pathlib import Path

    return Path(default_db_file(environ))
