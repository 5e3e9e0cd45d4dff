"""The page's modules joined into one script (serve/ui/bundle.py), and the socket it is served on.

The bundle runs under node here (the page's own behaviour is the browser tests' business):
each module runs once, its imports first, with the names it imports bound to what the other
module exported.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from acp_proxy.serve.ui.app import STATIC, _assets, version
from acp_proxy.serve.ui.bundle import BundleError, bundle
from acp_proxy.serve.ui.server import bind
from tests.support.processes import run_to_end


def node(*args: str) -> str:
    if shutil.which("node") is None:
        pytest.fail("node is missing: .ci/install-node-peers installs it")
    done = run_to_end(["node", *args], timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def run_node(tmp_path: Path, script: str) -> str:
    path = tmp_path / "bundle.mjs"
    path.write_text(script)
    return node(str(path))


def test_each_module_runs_once_after_its_imports(tmp_path: Path) -> None:
    modules = {
        "app.js": 'import { twice } from "./lib/math.js";\n'
        'import { say, NAME as who } from "./words.js";\n'
        "say(who + ' ' + twice(21));\n",
        "words.js": 'import { twice } from "./lib/math.js";\n'
        "console.log('words');\n"
        "export const NAME = 'answer' + twice(0);\n"
        "export function say(text) { console.log(text); }\n",
        "lib/math.js": "console.log('math');\nexport function twice(n) { return 2 * n; }\n",
    }
    out = run_node(tmp_path, bundle(modules, "app.js"))
    assert out.splitlines() == ["math", "words", "answer0 42"]


def test_module_scopes_stay_apart(tmp_path: Path) -> None:
    modules = {
        "app.js": 'import { a } from "./a.js";\nimport { b } from "./b.js";\n'
        "const LIMIT = 3;\nconsole.log(a(), b(), LIMIT);\n",
        "a.js": "const LIMIT = 1;\nexport function a() { return LIMIT; }\n",
        "b.js": "const LIMIT = 2;\nexport async function b() { return LIMIT; }\n",
    }
    out = run_node(tmp_path, bundle(modules, "app.js"))
    assert out.strip() == "1 Promise { 2 } 3"


@pytest.mark.parametrize(
    ("modules", "said"),
    [
        ({"app.js": 'import { x } from "./gone.js";\n'}, "no module gone.js"),
        ({"app.js": 'import { x } from "./a.js";\n', "a.js": "export const y = 1;\n"},
         "a.js does not export x"),
        ({"app.js": 'import { x } from "./a.js";\n', "a.js": 'import { y } from "./app.js";\n'
          "export const x = 1;\n"}, "import cycle: app.js -> a.js -> app.js"),
        ({"app.js": "export let counter = 0;\n"}, "only `export function|const|class NAME`"),
        ({"app.js": "export default 1;\n"}, "only `export function|const|class NAME`"),
        ({"app.js": 'import * as all from "./a.js";\n', "a.js": ""}, "only `import { names }"),
        ({"app.js": 'const later = import("./a.js");\n'}, "a dynamic import"),
    ],
)  # fmt: skip
def test_what_it_cannot_join_is_refused(modules: dict[str, str], said: str) -> None:
    with pytest.raises(BundleError, match=None) as raised:
        bundle(modules, "app.js")
    assert said in str(raised.value)


def test_the_page_script_holds_every_module_it_imports(tmp_path: Path) -> None:
    assets = _assets()
    script = assets["page.js"][0].decode()
    imported = {
        p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*.js")
    }  # every module of the page is reached from app.js
    for name in imported:
        assert f"// ---- {name}\n" in script, name
    page = assets["index.html"][0].decode()
    assert (
        f'<script type="module" src="static/page.js?v={version(script.encode())}"></script>' in page
    )
    assert "static/app.js" not in page
    # It parses as a module (the browser tests run it).
    (tmp_path / "page.mjs").write_text(script)
    node("--check", str(tmp_path / "page.mjs"))


def test_the_listening_socket_turns_nagle_off() -> None:
    # asyncio sets TCP_NODELAY on accepted sockets only when the socket says it is TCP; with
    # Nagle on, a keep-alive answer written in two parts waits for the browser's delayed ACK.
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        client = socket.create_connection(sock.getsockname())
        accepted, _ = sock.accept()
        try:
            assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            accepted.close()
            client.close()
    finally:
        sock.close()
