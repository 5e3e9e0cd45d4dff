"""Getting the schemas a check needs: one behaviour for ``check``, ``record --check``, ``bundle``.

Rules:
- A folder the user named (``--schema-dir`` / ``ACP_PROXY_SCHEMAS``) must hold schemas:
  anything wrong with it is their mistake and raises ``SchemasUnavailable``.
- Otherwise the newest installed version is used. When none is installed and npm is there,
  the default version is fetched once into the user cache (``schema_fetch``), saying so on
  stderr first, since it takes a moment and reaches the npm registry.
- When that is not possible (no npm, the fetch failed), the check goes on without schema
  validation (ACP000) after one line saying it was skipped and how to get it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from acp_proxy.check.schema_files import (
    DEFAULT_VERSION,
    HOW_TO_GET,
    PACKAGE,
    SCHEMAS_ENV,
    SchemasUnavailable,
    cache_root,
    installed,
    load_book,
)
from acp_proxy.check.schemas import SchemaBook
from acp_proxy.stderr import Reporter

Fetcher = Callable[[str, Path], object]


@dataclass(frozen=True, slots=True)
class Schemas:
    book: SchemaBook | None  # None: schema validation skipped
    note: str | None = None  # what was said when it was skipped


def _fetch(spec: str, root: Path) -> object:
    from acp_proxy.check.schema_fetch import fetch

    return fetch(spec, root)


def obtain(
    explicit: Path | None,
    report: Reporter,
    *,
    environ: Mapping[str, str] = os.environ,
    which: Callable[[str], str | None] = shutil.which,
    fetcher: Fetcher = _fetch,
) -> Schemas:
    """The schema book to check with, fetching it on first use (see module rules)."""
    if explicit is not None or environ.get(SCHEMAS_ENV):
        return Schemas(load_book(explicit, environ))
    root = cache_root(environ)
    if not installed(root) and which("npm") is not None:
        report(f"no ACP schemas installed yet: fetching {PACKAGE}@{DEFAULT_VERSION} with npm "
               f"into {root} (once)")  # fmt: skip
        try:
            fetcher(DEFAULT_VERSION, root)
        except SchemasUnavailable as error:
            return _skipped(report, f"fetching the schemas failed ({error})")
    try:
        return Schemas(load_book(None, environ))
    except SchemasUnavailable as error:
        return _skipped(report, str(error).removesuffix(f": {HOW_TO_GET}"))


def _skipped(report: Reporter, why: str) -> Schemas:
    note = f"schema validation (ACP000) skipped: {why}; to get it, {HOW_TO_GET}"
    report(note)
    return Schemas(None, note)
