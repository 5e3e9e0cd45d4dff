"""Sans-I/O: what the official ACP JSON Schema says about each field of one message.

Rules:
- Input: the parsed schema documents (``schema_files.load_documents``), the negotiated
  version, the message's role (request params, response result, notification params), its
  method and, for ``session/update``, its update kind. Output: ``(JSON path, description)``
  for every member of the message that the schema describes, in document order.
- The schema of the message's own method is walked beside the value: ``$ref`` is followed,
  ``allOf`` members are merged, and of ``oneOf`` / ``anyOf`` the variant whose ``const``
  discriminator (``type``, ``sessionUpdate`` ...) matches the value is taken, else the first
  object variant that knows the value's members. Stable schema first, then unstable.
- Bounded: at most ``MAX_FIELDS`` descriptions and ``MAX_DEPTH`` levels, so a huge message
  costs little. Peer values of any shape never raise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_proxy.check.schemas import SchemaError, method_map, update_variants

MAX_FIELDS = 400
MAX_DEPTH = 12
STABILITIES = ("stable", "unstable")
Documents = Mapping[tuple[int, str], Mapping[str, Any]]


def _resolve(document: Mapping[str, Any], node: Any, depth: int = 0) -> Any:
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < 32:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            return {}
        target: Any = document
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        node = target if isinstance(target, dict) else {}
        depth += 1
    return node if isinstance(node, dict) else {}


def _description(document: Mapping[str, Any], node: Any) -> str | None:
    """A node's own description, else that of what it refers to (through allOf/$ref)."""
    seen = 0
    while isinstance(node, dict) and seen < 8:
        text = node.get("description")
        if isinstance(text, str) and text.strip():
            return text.strip()
        if "$ref" in node:
            node = _resolve(document, node)
        elif isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
            node = node["allOf"][0]
        else:
            return None
        seen += 1
    return None


def _matches(document: Mapping[str, Any], variant: Any, value: Any) -> int:
    """How well a union variant fits ``value``: 2 a const matches, 1 it could, 0 it cannot."""
    node = _resolve(document, variant)
    if not isinstance(value, dict):
        kind = node.get("type")
        names = {"string": str, "boolean": bool, "number": int | float, "integer": int}
        if value is None:
            return 1 if kind == "null" or (isinstance(kind, list) and "null" in kind) else 0
        wanted = names.get(kind) if isinstance(kind, str) else None
        return 1 if wanted is not None and isinstance(value, wanted) else 0
    properties = _properties(document, node)
    for name, schema in properties.items():
        const = _resolve(document, schema).get("const") if isinstance(schema, dict) else None
        if const is not None:
            if value.get(name) != const:
                return 0
            return 2
    return 1 if properties and set(value) & set(properties) else 0


def _choose(document: Mapping[str, Any], node: Mapping[str, Any], value: Any) -> Any:
    for keyword in ("oneOf", "anyOf"):
        variants = node.get(keyword)
        if isinstance(variants, list) and variants:
            scored = [(_matches(document, v, value), i) for i, v in enumerate(variants)]
            best = max(scored, key=lambda s: (s[0], -s[1]))
            return variants[best[1]] if best[0] > 0 else None
    return None


def _properties(document: Mapping[str, Any], node: Any, depth: int = 0) -> dict[str, Any]:
    node = _resolve(document, node)
    found: dict[str, Any] = {}
    if depth > 8:
        return found
    for part in node.get("allOf", []) if isinstance(node.get("allOf"), list) else []:
        found.update(_properties(document, part, depth + 1))
    properties = node.get("properties")
    if isinstance(properties, dict):
        found.update(properties)
    return found


class _Walk:
    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document
        self.found: list[tuple[str, str]] = []

    def value(self, node: Any, value: Any, path: str, depth: int) -> None:
        if depth > MAX_DEPTH or len(self.found) >= MAX_FIELDS:
            return
        resolved = _resolve(self.document, node)
        for part in resolved.get("allOf", []) if isinstance(resolved.get("allOf"), list) else []:
            if not _properties(self.document, part) and "items" not in _resolve(
                self.document, part
            ):
                self.value(part, value, path, depth + 1)
        variant = _choose(self.document, resolved, value)
        if variant is not None:
            self.value(variant, value, path, depth + 1)
        if isinstance(value, dict):
            properties = _properties(self.document, resolved)
            for name, member in value.items():
                schema = properties.get(name)
                if schema is None:
                    continue
                child = f"{path}.{name}"
                text = _description(self.document, schema)
                if text is not None and len(self.found) < MAX_FIELDS:
                    self.found.append((child, text))
                self.value(schema, member, child, depth + 1)
        elif isinstance(value, list):
            items = resolved.get("items")
            if isinstance(items, dict):
                for index, member in enumerate(value[:50]):
                    self.value(items, member, f"{path}[{index}]", depth + 1)


def describe(
    documents: Documents,
    version: int | None,
    role: str,
    method: str,
    update_kind: str | None,
    message: Any,
) -> list[tuple[str, str]]:
    """``(path, description)`` of the members of ``message`` (a whole JSON-RPC message).

    Paths start at the message: ``$.params.update.content.text``. [] when the schemas do not
    know the method (or no schema of that version is installed).
    """
    if not isinstance(message, dict):
        return []
    member = {"request": "params", "notification": "params", "response": "result"}.get(role)
    if member is None:
        return []
    for stability in STABILITIES:
        document = documents.get((version or 1, stability))
        if document is None:
            continue
        try:
            definitions = method_map(document)
            kinds = update_variants(document)
        except (SchemaError, AttributeError, TypeError, KeyError):
            continue
        name = definitions.get((role, method))
        if name is None:
            continue
        walk = _Walk(document)
        root = {"$ref": f"#/$defs/{name}"}
        top = _description(document, root)
        if top is not None:
            walk.found.append((f"$.{member}", top))
        value = message.get(member)
        walk.value(root, value, f"$.{member}", 0)
        if method == "session/update" and update_kind is not None and isinstance(value, dict):
            pointer = kinds.get(update_kind)
            if pointer is not None and not any(
                p.startswith("$.params.update.") for p, _ in walk.found
            ):
                variant = {"$ref": pointer}
                text = _description(document, variant)
                if text is not None:
                    walk.found.append(("$.params.update", text))
                walk.value(variant, value.get("update"), "$.params.update", 0)
        return walk.found
    return []
