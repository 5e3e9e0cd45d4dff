"""design.md's import rules: the sans-I/O floor knows no process, clock or database."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "acp_proxy"
SANS_IO = ["wire", "jsonrpc", "acp", "observer", "errors", "paths"]
SANS_IO += ["transcript", "transcript_values", "transcript_entities", "transcript_replay"]
SANS_IO += ["transcript_state", "recording_values"]
SANS_IO += ["checks", "checks_base", "schemas", "schema_files", "normalize", "diffing"]
SANS_IO += ["check_report", "checkdoc"] + [f"checks_rules_{m}" for m in ("framing", "session")]
SANS_IO += [f"checks_rules_{m}" for m in ("lifecycle", "updates", "replay")]
SANS_IO += ["replay", "replay_script", "replay_expects", "replay_match", "replay_ids"]
SANS_IO += ["replay_placeholders", "replay_history", "replay_report", "drive"]
SANS_IO += ["replay_values", "replay_live", "replay_episodes", "cassette_episodes"]
SANS_IO += ["secrets", "redact", "verify"]
FORBIDDEN = ["anyio", "sqlite3", "click", "subprocess", "threading", "sqlite_utils"]


@pytest.mark.parametrize("module", SANS_IO)
def test_sans_io_modules_import_no_io(module: str) -> None:
    code = (
        f"import sys, acp_proxy.{module}; "
        f"print(sorted(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    )
    assert result.stdout.strip() == "[]"


def test_nothing_imports_cli() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name in {"cli.py", "__main__.py", "clidoc.py", "entry.py"}:
            continue
        if path.name.startswith("cli_"):  # command modules (cli.LAZY_COMMANDS) reuse cli's options
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").endswith("cli"), f"{path} imports cli"
            if isinstance(node, ast.Import):
                assert all(not a.name.endswith(".cli") for a in node.names), path


def test_only_store_modules_speak_sql() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name.startswith("store"):
            continue
        tree = ast.parse(path.read_text())
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        assert "sqlite3" not in imported, f"{path} imports sqlite3"


def test_every_module_states_its_rules() -> None:
    for path in PACKAGE.rglob("*.py"):
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring, f"{path} has no module docstring"
