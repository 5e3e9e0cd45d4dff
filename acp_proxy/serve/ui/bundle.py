"""The page's ES modules joined into one script, so a cold page asks for one file, not twenty.

Rules:
- Sans-I/O: given the modules' texts by path (``views/timeline.js``), returns the script text.
- The modules stay the source: each becomes a function scope of its own, run once in the
  order the browser would run them (a module's imports first, depth first, in the order they
  are written), its exports handed to the modules that import them.
- Only the forms the page's modules use are understood, each on a line of its own:
  ``import { a, b as c } from "./x.js";`` and ``export`` before ``function``, ``async
  function``, ``const`` or ``class``. Anything else that imports or exports (a default export,
  ``export let``, whose importers would not see it change, a dynamic ``import(``), an import
  of a module that is not there, or a cycle, raises ``BundleError``: the server would not
  start with a page that does not work.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

_IMPORT = re.compile(r'^import \{([^}]*)\} from "(\.{1,2}/[^"]+\.js)";\s*$')
_EXPORT = re.compile(r"^export (?:async function|function|const|class) ([A-Za-z_$][\w$]*)")
_NAME = re.compile(r"^[A-Za-z_$][\w$]*$")


class BundleError(ValueError):
    """The modules use a form the bundle does not understand, or do not fit together."""


@dataclass(frozen=True, slots=True)
class _Module:
    path: str
    imports: list[tuple[str, list[tuple[str, str]]]]  # (module path, [(exported, local)])
    exports: list[str]
    body: list[str]


def _parse(path: str, text: str) -> _Module:
    imports: list[tuple[str, list[tuple[str, str]]]] = []
    exports: list[str] = []
    body: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        where = f"{path}:{number}"
        if "import(" in line:
            raise BundleError(f"{where}: a dynamic import is not bundled")
        if line.startswith(("import ", "import{")):
            found = _IMPORT.match(line)
            if found is None:
                raise BundleError(f'{where}: only `import {{ names }} from "./x.js";` is bundled')
            target = posixpath.normpath(posixpath.join(posixpath.dirname(path), found.group(2)))
            imports.append(
                (target, [_alias(where, n) for n in found.group(1).split(",") if n.strip()])
            )
            continue
        if line.startswith(("export ", "export{")):
            found = _EXPORT.match(line)
            if found is None:
                raise BundleError(f"{where}: only `export function|const|class NAME` is bundled")
            exports.append(found.group(1))
            body.append(line[len("export ") :])
            continue
        body.append(line)
    return _Module(path, imports, exports, body)


def _alias(where: str, name: str) -> tuple[str, str]:
    parts = name.split()
    if len(parts) == 1 and _NAME.match(parts[0]):
        return parts[0], parts[0]
    if len(parts) == 3 and parts[1] == "as" and _NAME.match(parts[0]) and _NAME.match(parts[2]):
        return parts[0], parts[2]
    raise BundleError(f"{where}: cannot read the imported name {name.strip()!r}")


def _variable(path: str) -> str:
    return "module_" + re.sub(r"\W", "_", path)


def bundle(modules: dict[str, str], entry: str) -> str:
    """One script running ``entry`` and every module it imports, as the browser would."""
    parsed: dict[str, _Module] = {}
    order: list[str] = []
    visiting: list[str] = []

    def visit(path: str, importer: str | None) -> None:
        if path in order:
            return
        if path in visiting:
            raise BundleError(f"import cycle: {' -> '.join([*visiting, path])}")
        if path not in modules:
            raise BundleError(f"{importer or 'entry'}: no module {path}")
        module = parsed.setdefault(path, _parse(path, modules[path]))
        visiting.append(path)
        for target, _ in module.imports:
            visit(target, path)
        visiting.pop()
        order.append(path)

    visit(entry, None)
    out = [
        f"// The page's modules, joined by the server (acp_proxy/serve/ui/bundle.py); from {entry}."
    ]
    for path in order:
        module = parsed[path]
        out.append(f"// ---- {path}")
        out.append(f"const {_variable(path)} = (() => {{")
        for target, names in module.imports:
            missing = [n for n, _ in names if n not in parsed[target].exports]
            if missing:
                raise BundleError(f"{path}: {target} does not export {', '.join(missing)}")
            bound = ", ".join(n if n == local else f"{n}: {local}" for n, local in names)
            out.append(f"const {{ {bound} }} = {_variable(target)};")
        out.extend(module.body)
        out.append(f"return {{ {', '.join(module.exports)} }};")
        out.append("})();")
    return "\n".join(out) + "\n"
