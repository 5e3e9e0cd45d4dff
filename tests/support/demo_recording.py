"""The demo recording the tests share: the official ACP Python SDK pair (acp_proxy/demo) talking
through the real ``acp-proxy record``, made once per test session (once per pytest-xdist worker)
by the session fixture ``demo_recording`` (tests/conftest.py).

Rules:
- It is made once and only read afterwards: a test that writes (a bundle, an export, another
  recording in the same database) writes into its own ``tmp_path``, or copies the database.
- It is seeded with what the redaction, bundle, export and OpenTelemetry tests look for: a
  GitHub token in the prompt; an Anthropic key, an e-mail address and the value of the agent's
  ``MY_API_TOKEN`` in the file the client serves (as a pasted ``.env`` would hold them); the
  user's name in every path (the project is HOME/project, HOME ending in /home/USER); and markup
  in the prompt, which every export must show as text.
- One prompt, one file read with its permission request: the span tree, the Markdown golden
  file and the bundle's contents are written against exactly this conversation.

Its readers: tests/inspect/test_golden_markdown.py, tests/integration/test_otel_peers.py and
tests/share/test_bundle.py. One demo database is still made by its own test module, for needs
this one cannot meet: tests/serve/test_mcp_server.py records two labelled connections with the
``acp-proxy demo`` command itself (that command's only end-to-end run), one of two prompt turns,
for the MCP tools' diff, listing order and turn paging. Tests whose subject is a live recording
(``record --otlp``, the inspector's live page, the pytest plugin's cassettes) record their own.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import acp_proxy_argv, run_to_end
from tests.support.schemas import installed_schemas

REPO = Path(__file__).resolve().parents[2]
USER = "alice"
LABEL = "demo"
GITHUB = "ghp_" + "R3dact" * 6  # pasted in the prompt
ANTHROPIC = "sk-ant-api03-" + "Zq7" * 15  # in the served file
ENV_VALUE = "mellow-harbor-7391-quartz"  # the agent's MY_API_TOKEN: no known shape
EMAIL = "dana.lee@example.net"  # in the served file
NOTES_FILE = "notes.txt"
NOTES = (
    f"first line of the notes\n\nMY_API_TOKEN={ENV_VALUE}\nANTHROPIC_API_KEY={ANTHROPIC}\n"
    f"# ask {EMAIL}\n"
)
PROMPT = (
    f"My token {GITHUB} stopped working, see the notes: <b>bold</b> `code` <script>x()</script>"
)
SECRETS = (GITHUB, ANTHROPIC, ENV_VALUE, EMAIL)
AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]


def client(prompt: str = PROMPT) -> list[str]:
    """The demo client serving NOTES_FILE and saying ``prompt``, up to its ``--``."""
    return [sys.executable, "-m", "acp_proxy.demo.client", "--file", NOTES_FILE, "--prompt",
            prompt, "--"]  # fmt: skip


@dataclass(frozen=True)
class DemoRecording:
    db: Path
    project: Path  # the client's working folder, HOME/project
    env: dict[str, str]  # the user's environment the pair ran in: copy it before changing it

    @property
    def root(self) -> Path:
        """The folder holding the database and the user's home."""
        return self.db.parent


def user_env(home: Path) -> dict[str, str]:
    """This checkout first on PYTHONPATH, the user's HOME and USER, the agent's MY_API_TOKEN,
    the schemas the project installs, and no OTEL_ setting of the machine's own."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    env.pop("ACP_PROXY_SCHEMAS", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update({"HOME": str(home), "USER": USER, "MY_API_TOKEN": ENV_VALUE})
    env["XDG_CACHE_HOME"] = str(installed_schemas().parents[2])
    return env


def record(root: Path) -> DemoRecording:
    """Make the demo recording in ``root`` (rec.sqlite, and home/USER/project)."""
    home = root / "home" / USER
    project = home / "project"
    project.mkdir(parents=True)
    (project / NOTES_FILE).write_text(NOTES)
    env = user_env(home)
    db = root / "rec.sqlite"
    proxy = acp_proxy_argv("record", "--db", str(db), "--label", LABEL, "--")
    done = run_to_end([*client(), *proxy, *AGENT], cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return DemoRecording(db, project, env)
