"""Running acp-proxy commands in process against a recording database, checking the status."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from acp_proxy.cli.main import main as cli


def run(db_path: Path, *args: str, code: int = 0) -> Result:
    """``acp-proxy ARGS --db DB_PATH``; fails the test unless it exits ``code``."""
    result = CliRunner().invoke(cli, [*args, "--db", str(db_path)])
    assert result.exit_code == code, (result.output, result.exception)
    return result
