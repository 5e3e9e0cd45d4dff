"""The official ACP JSON Schemas as the project installs them (``.ci/install-schemas``).

Tests use exactly what ``acp-proxy schemas fetch`` put in the cache, never a copy from outside
the repository, and fail (never skip) when it is missing: the README's test command installs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_proxy.check.schema_files import cache_root

VERSION = "2.4.0"


def installed_schemas() -> Path:
    """The installed schema folder of ``VERSION`` (``schema/v1``, ``schema/v2``, ``LICENSE``)."""
    folder = cache_root() / VERSION
    if not folder.is_dir():
        pytest.fail(f"{folder} missing: run .ci/install-schemas (the README's test command does)")
    return folder
