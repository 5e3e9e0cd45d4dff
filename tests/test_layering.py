"""design.md's import rules, enforced by folder: the tree itself says what may import what.

- ``protocol/``, every engine (``replay/`` but its ``shell/``, ``check/rules/``, the rule engine)
  and every module whose docstring opens with "Sans-I/O" import no I/O, directly or through
  the acp_proxy modules they import.
- Only ``store/`` speaks SQL; only ``cli/`` imports click; nothing but ``cli/`` and
  ``__main__`` imports ``cli/``.
- ``record/`` never imports anyio or asyncio, not even through what it imports.
- Module by module, no import runs from a lower layer to a higher one (``LAYERS``, the order of
  docs/design.md) and no modules import one another in a circle: every import counts, at any
  depth of the code, type-checking ones too.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

from tests.support.processes import run_to_end

PACKAGE = Path(__file__).parent.parent / "acp_proxy"
IO_MODULES = {"os", "select", "sqlite3", "sqlite_utils", "subprocess", "anyio", "asyncio"}
IO_MODULES |= {"click", "threading", "socket", "signal", "fcntl", "mmap", "tempfile", "shutil"}
IO_MODULES |= {"pathlib", "io", "zipfile", "tarfile", "time", "uvicorn", "starlette", "mcp"}
ENGINE_FOLDERS = ["protocol", "replay", "check/rules", "inspect/transcript"]
ENGINE_MODULES = ["check/engine.py", "check/base.py"]
NOT_ENGINES = ["replay/shell"]


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def _imports(path: Path) -> frozenset[str]:
    """Every module ``path`` imports, at any depth of its code, as absolute dotted names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import (the layering reads absolute ones)"
            module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return frozenset(names)


def _inside(path: Path, folder: str) -> bool:
    return (PACKAGE / folder) in path.parents


def _is_sans_io(path: Path) -> bool:
    relative = path.relative_to(PACKAGE).as_posix()
    if any(_inside(path, folder) for folder in NOT_ENGINES):
        return False
    docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
    return (
        any(_inside(path, folder) for folder in ENGINE_FOLDERS)
        or relative in ENGINE_MODULES
        or docstring.startswith("Sans-I/O")
    )


SANS_IO = [path for path in _modules() if _is_sans_io(path)]
BY_NAME = {_name(path): path for path in _modules()}


def _project_imports(path: Path) -> set[Path]:
    return {BY_NAME[name] for name in _imports(path) if name in BY_NAME and BY_NAME[name] != path}


def test_the_engine_folders_are_found() -> None:
    names = {_name(path) for path in SANS_IO}
    assert {"acp_proxy.protocol.observer", "acp_proxy.replay.engine"} <= names
    assert {"acp_proxy.check.engine", "acp_proxy.check.rules.framing"} <= names
    assert not any(name.startswith("acp_proxy.replay.shell") for name in names)


@pytest.mark.parametrize("path", SANS_IO, ids=_name)
def test_sans_io_modules_import_no_io(path: Path) -> None:
    io = {name.split(".")[0] for name in _imports(path)} & IO_MODULES
    assert not io, f"{_name(path)} imports {sorted(io)}"
    below = [_name(p) for p in _project_imports(path) if p not in SANS_IO]
    assert not below, f"{_name(path)} imports modules that do I/O: {sorted(below)}"


@pytest.mark.parametrize("path", SANS_IO, ids=_name)
def test_sans_io_modules_load_no_io_at_run_time(path: Path) -> None:
    watched = ["anyio", "sqlite3", "click", "subprocess", "threading", "sqlite_utils"]
    code = f"import sys, {_name(path)}; print(sorted(m for m in {watched!r} if m in sys.modules))"
    result = run_to_end([sys.executable, "-c", code], check=True, timeout=30)
    assert result.stdout.strip() == "[]"


def test_only_store_speaks_sql() -> None:
    for path in _modules():
        if _inside(path, "store"):
            continue
        sql = {name.split(".")[0] for name in _imports(path)} & {"sqlite3", "sqlite_utils"}
        assert not sql, f"{_name(path)} imports {sorted(sql)}"


def test_only_store_runs_sql() -> None:
    """A database handle may be held elsewhere (``readers.Database``), never queried."""
    sql_calls = {"execute", "executemany", "executescript"}
    for path in _modules():
        if _inside(path, "store"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr not in sql_calls, f"{_name(path)}:{node.lineno} runs SQL"


def test_only_cli_imports_click_and_nothing_imports_cli() -> None:
    for path in _modules():
        if _inside(path, "cli") or path == PACKAGE / "__main__.py":
            continue
        imported = _imports(path)
        assert not any(name.split(".")[0] == "click" for name in imported), _name(path)
        assert not any(name.startswith("acp_proxy.cli") for name in imported), _name(path)


def _record_closure() -> set[Path]:
    seen: set[Path] = set()
    todo = [path for path in _modules() if _inside(path, "record")]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo.extend(_project_imports(path))
    return seen


def test_record_never_imports_anyio_or_asyncio() -> None:
    for path in _record_closure():
        async_io = {name.split(".")[0] for name in _imports(path)} & {"anyio", "asyncio"}
        assert not async_io, f"{_name(path)} (reached from record/) imports {sorted(async_io)}"


def test_record_loads_no_anyio_at_run_time() -> None:
    modules = sorted(_name(path) for path in _modules() if _inside(path, "record"))
    code = (
        f"import sys; [__import__(m) for m in {modules!r}]; "
        "print(sorted(m for m in ('anyio', 'asyncio') if m in sys.modules))"
    )
    result = run_to_end([sys.executable, "-c", code], check=True, timeout=30)
    assert result.stdout.strip() == "[]"


def test_every_module_states_its_rules() -> None:
    for path in _modules():
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring, f"{path} has no module docstring"


def test_no_module_is_left_at_the_top_but_the_shared_few() -> None:
    top = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert top == [
        "__init__.py", "__main__.py", "display.py", "errors.py", "paths.py", "plural.py",
        "stderr.py",
    ]  # fmt: skip


GROUND_FLOOR = ["display.py", "errors.py", "paths.py", "plural.py", "stderr.py"]


@pytest.mark.parametrize("name", GROUND_FLOOR)
def test_the_ground_floor_imports_nothing_above_it(name: str) -> None:
    """The shared few are imported by every layer, so they import only one another."""
    floor = {PACKAGE / other for other in GROUND_FLOOR}
    above = [_name(path) for path in _project_imports(PACKAGE / name) if path not in floor]
    assert not above, f"{name} imports {sorted(above)}"


# From the bottom up; a package may import its own layer and those below it, never above.
LAYERS: list[set[str]] = [
    {"acp_proxy", "errors", "paths", "display", "plural", "stderr"},  # the ground floor
    {"protocol"},  # what bytes mean
    {"store"},  # the only SQL
    {"check"},  # the rules, and one check or diff of a stored scope
    {"inspect", "editors"},  # reading recordings for people; editor settings
    {"share", "record"},  # bug reports and redaction; the proxy and its recorder
    {"otel", "replay", "remote", "testing", "demo"},  # built on the recorder, bundles, exports
    {"serve"},  # servers over all of it
    {"cli", "__main__"},  # the command line composes everything
]


def _layer(name: str) -> int:
    parts = name.split(".")
    package = parts[1] if len(parts) > 1 else parts[0]
    found = [i for i, layer in enumerate(LAYERS) if package in layer]
    assert found, f"{name}: its package {package!r} is in no layer of LAYERS"
    return found[0]


def test_every_package_has_a_layer() -> None:
    for path in _modules():
        _layer(_name(path))


@pytest.mark.parametrize("path", _modules(), ids=_name)
def test_no_module_imports_from_a_higher_layer(path: Path) -> None:
    here = _layer(_name(path))
    above = sorted(_name(p) for p in _project_imports(path) if _layer(_name(p)) > here)
    assert not above, f"{_name(path)} (layer {here}) imports from higher layers: {above}"


def test_no_modules_import_each_other_in_a_circle() -> None:
    graph = {path: _project_imports(path) - {path} for path in _modules()}
    circles: list[list[str]] = []
    order: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()

    def visit(node: Path) -> None:  # Tarjan: strongly connected components
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in order:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], order[other])
        if low[node] == order[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(_name(member))
                if member == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in graph:
        if node not in order:
            visit(node)
    assert not circles, f"modules that import each other: {circles}"


def test_record_never_chooses_a_sink() -> None:
    """The command line lists the recorder's sinks (cli/sinks.py); record/ knows none."""
    for path in _modules():
        if _inside(path, "record"):
            upward = {name for name in _imports(path) if name.startswith("acp_proxy.otel")}
            assert not upward, f"{_name(path)} imports {sorted(upward)}"


def test_check_shows_text_through_the_ground_floor_not_inspect() -> None:
    """check/ sits below inspect/: its reports make text visible with ``acp_proxy.display``."""
    for path in _modules():
        if _inside(path, "check"):
            upward = {name for name in _imports(path) if name.startswith("acp_proxy.inspect")}
            assert not upward, f"{_name(path)} imports {sorted(upward)}"


def test_code_names_no_issues_and_quotes_no_measurements() -> None:
    """Comments and docstrings state rules: history lives in git, figures in docs/."""
    history = re.compile(r"\bissue\s*#?\d+|\(#\d+\)", re.IGNORECASE)
    measured = re.compile(r"\d+(\.\d+)?\s?(us|µs)\b.*\b(p50|p99|median|repeats?)\b")
    for path in _modules():
        text = path.read_text()
        assert not history.search(text), f"{_name(path)} names an issue"
        assert not measured.search(text), f"{_name(path)} quotes a measurement"
