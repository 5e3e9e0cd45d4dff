"""One way to get schemas for check, record --check and bundle: installed, fetched, or skipped."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from acp_proxy.check.schema_files import SchemasUnavailable, cache_root
from acp_proxy.check.schema_setup import obtain
from tests.support.schemas import installed_schemas


def _environ(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_installed_schemas_are_used_without_a_word(tmp_path: Path) -> None:
    said: list[str] = []
    environ = _environ(tmp_path)
    shutil.copytree(installed_schemas(), cache_root(environ) / installed_schemas().name)
    schemas = obtain(None, said.append, environ=environ, which=lambda _: None)
    assert schemas.book is not None
    assert said == []


def test_first_use_fetches_when_npm_is_there(tmp_path: Path) -> None:
    said: list[str] = []
    environ = _environ(tmp_path)

    def fetcher(spec: str, root: Path) -> object:
        return shutil.copytree(installed_schemas(), root / spec)

    schemas = obtain(None, said.append, environ=environ, which=lambda _: "/usr/bin/npm",
                     fetcher=fetcher)  # fmt: skip
    assert schemas.book is not None
    assert len(said) == 1
    assert said[0].startswith("no ACP schemas installed yet: fetching @agentclientprotocol/sdk@")


def test_a_failed_fetch_skips_schema_validation_with_one_line(tmp_path: Path) -> None:
    said: list[str] = []

    def fetcher(spec: str, root: Path) -> object:
        raise SchemasUnavailable("npm pack failed: E404")

    schemas = obtain(None, said.append, environ=_environ(tmp_path), which=lambda _: "npm",
                     fetcher=fetcher)  # fmt: skip
    assert schemas.book is None
    assert len(said) == 2
    assert said[1] == schemas.note
    assert "fetching the schemas failed (npm pack failed: E404)" in said[1]
    assert "acp-proxy schemas fetch" in said[1]


def test_no_npm_skips_with_one_line(tmp_path: Path) -> None:
    said: list[str] = []
    schemas = obtain(None, said.append, environ=_environ(tmp_path), which=lambda _: None)
    assert schemas.book is None
    assert said == [schemas.note]
    assert said[0].startswith("schema validation (ACP000) skipped: no ACP schemas installed; ")


def test_a_named_folder_without_schemas_is_a_mistake(tmp_path: Path) -> None:
    with pytest.raises(SchemasUnavailable):
        obtain(tmp_path, [].append, environ=_environ(tmp_path), which=lambda _: "npm")
