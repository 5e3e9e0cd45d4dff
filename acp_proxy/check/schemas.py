"""Sans-I/O: the official ACP JSON Schemas as compiled validators, one per method and role.

Rules:
- Input is the parsed schema documents (``schema.json`` and ``schema.unstable.json`` of v1 and
  v2); reading files is ``schema_files``' job, fetching them ``schema_fetch``'s. Nothing here
  copies or ships a schema: they come from the user's cache or a folder they name.
- Every message is validated against the definition of ITS OWN method and role (request
  params, response result, notification params), never against the open top-level envelope,
  which accepts almost anything. Method names come from each definition's ``x-method``; the
  role from the envelope (``AgentRequest``, ``ClientResponse`` ...) that refers to it, else
  from the definition's name (``...Notification``). A
  ``session/update`` is validated against the variant of its own ``sessionUpdate`` kind, and
  its envelope (``sessionId``, ``_meta``) against the notification definition.
- Stable first: a method or update kind defined by the stable schema of the negotiated
  version is validated against it; one defined only by the unstable schema (fork, nes,
  notices in v2, compaction, subagents ...) against the unstable one. Unknown methods and
  update kinds get no validator (other rules judge them: v1's union is closed, so a custom
  ``_`` kind would otherwise fail it).
- Validators are compiled once per document (``jsonschema_rs.validator_map_for`` compiles
  every subschema in one go), looked up by JSON pointer afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema_rs

ROLES = ("request", "response", "notification")
STABILITIES = ("stable", "unstable")
SCHEMA_FILES = {"stable": "schema.json", "unstable": "schema.unstable.json"}
# Envelope definition -> role of the definitions it refers to.
_ENVELOPES = {
    "AgentRequest": "request", "ClientRequest": "request",
    "AgentResponse": "response", "ClientResponse": "response",
    "AgentNotification": "notification", "ClientNotification": "notification",
}  # fmt: skip
_SESSION_UPDATE = "session/update"
MAX_ERRORS = 3
MAX_MESSAGE = 240


class SchemaError(ValueError):
    """A schema document lacks what validation needs (raised while loading, not on traffic)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One schema violation: where in the message, what, and which definition said so."""

    path: str
    message: str
    definition: str


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref[len("#/$defs/") :]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def method_map(document: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """``(role, method) -> definition name`` for one schema document."""
    defs = document.get("$defs")
    if not isinstance(defs, dict):
        raise SchemaError("no $defs")
    found: dict[tuple[str, str], str] = {}
    for envelope, role in _ENVELOPES.items():
        for name in _refs(defs.get(envelope, {})):
            method = defs.get(name, {}).get("x-method")
            if isinstance(method, str):
                found.setdefault((role, method), name)
    # Definitions outside the six envelopes ($/cancel_request sits in the top-level union or a
    # protocol-level envelope): the role is in the definition's name.
    for name, definition in defs.items():
        method = definition.get("x-method") if isinstance(definition, dict) else None
        suffix = next((r for r in ROLES if name.lower().endswith(r)), None)
        if isinstance(method, str) and suffix is not None:
            found.setdefault((suffix, method), name)
    if ("request", "initialize") not in found or ("notification", _SESSION_UPDATE) not in found:
        raise SchemaError("no definitions for initialize and session/update (x-method)")
    return found


def update_variants(document: Mapping[str, Any]) -> dict[str, str]:
    """``sessionUpdate kind -> JSON pointer`` of its variant in ``SessionUpdate``."""
    union = document["$defs"].get("SessionUpdate")
    if not isinstance(union, dict):
        raise SchemaError("no SessionUpdate definition")
    keyword = "oneOf" if "oneOf" in union else "anyOf"
    variants: dict[str, str] = {}
    for index, variant in enumerate(union.get(keyword, [])):
        const = variant.get("properties", {}).get("sessionUpdate", {}).get("const")
        if isinstance(const, str):
            variants[const] = f"#/$defs/SessionUpdate/{keyword}/{index}"
    if not variants:
        raise SchemaError("SessionUpdate has no variants")
    return variants


class _Document:
    """One compiled schema document (a version's stable or unstable schema)."""

    def __init__(self, label: str, document: Mapping[str, Any]) -> None:
        self.label = label
        self.methods = method_map(document)
        self.variants = update_variants(document)
        self._document = document
        self._validators: jsonschema_rs.ValidatorMap | None = None

    def get(self, pointer: str) -> jsonschema_rs.Validator:
        if self._validators is None:  # compiled on first use: a v1 recording never pays for v2
            self._validators = jsonschema_rs.validator_map_for(dict(self._document))
        validator = self._validators.get(pointer)
        if validator is None:
            raise SchemaError(f"{self.label}: cannot compile {pointer}")
        return validator


_Target = tuple[jsonschema_rs.Validator, str, str | None]  # validator, definition, member


class SchemaBook:
    """Validators for every (version, role, method[, update kind]) the schemas define."""

    def __init__(self, documents: Mapping[tuple[int, str], Mapping[str, Any]], source: str) -> None:
        self.source = source
        self._docs = {
            key: _Document(f"v{key[0]} {key[1]}", doc) for key, doc in sorted(documents.items())
        }
        self._cache: dict[tuple[int, str, str, str | None], tuple[_Target, ...]] = {}

    @property
    def versions(self) -> list[int]:
        return sorted({version for version, _ in self._docs})

    def methods(self, version: int) -> set[str]:
        return {m for (v, _), d in self._docs.items() if v == version for _, m in d.methods}

    def targets(
        self, version: int, role: str, method: str, kind: str | None
    ) -> tuple[_Target, ...]:
        """Validators a message must satisfy, in order: (validator, definition, member)."""
        key = (version, role, method, kind)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._targets(version, role, method, kind)
        return cached

    def _targets(
        self, version: int, role: str, method: str, kind: str | None
    ) -> tuple[_Target, ...]:
        docs = [d for s in STABILITIES if (d := self._docs.get((version, s))) is not None]
        if method == _SESSION_UPDATE and role == "notification" and kind is not None:
            for doc in docs:
                if kind in doc.variants:
                    name = doc.methods[(role, method)]
                    variant = doc.get(doc.variants[kind])
                    return (
                        (variant, f"{doc.label} SessionUpdate {kind}", "update"),
                        (doc.get(f"#/$defs/{name}"), f"{doc.label} {name}", None),
                    )
            return ()  # an unknown kind: ACP022 judges it (v1's closed union would reject it)
        for doc in docs:
            found = doc.methods.get((role, method))
            if found is not None:
                return ((doc.get(f"#/$defs/{found}"), f"{doc.label} {found}", None),)
        return ()

    def validate(
        self, version: int, role: str, method: str, kind: str | None, instance: Any
    ) -> list[Problem]:
        """Problems of ``instance`` (params or result) for its own method; [] when valid.

        For a ``session/update`` the update is checked against its kind's variant first, so
        the problems name the missing field rather than "no variant of the union matched".
        """
        for validator, definition, member in self.targets(version, role, method, kind):
            value = instance
            if member is not None:
                value = instance.get(member) if isinstance(instance, dict) else None
            if validator.is_valid(value):
                continue
            return [
                Problem(_path(member or "", error.instance_path), _short(plain(error.message)),
                        definition)
                for error, _ in zip(validator.iter_errors(value), range(MAX_ERRORS), strict=False)
            ]  # fmt: skip
        return []


_TYPE_WORDS = {
    "array": "an array", "object": "an object", "string": "a string",
    "integer": "a whole number", "number": "a number", "boolean": "true or false",
    "null": "null",
}  # fmt: skip
_PLAIN = (
    (re.compile(r'^"(?P<name>.*)" is a required property$'), 'lacks "{name}"'),
    (re.compile(r'^(?P<value>.*) is not of types? (?P<types>".*")$'), "is {value}, not {types}"),
    (re.compile(r"^(?P<value>.*) is not valid under any of the schemas listed in the '\w+' "
                r"keyword$"), "is {value}, which matches none of the forms the schema allows"),
    (re.compile(r"^(?P<value>.*) is valid under more than one of the schemas listed in the "
                r"'oneOf' keyword$"), "matches more than one of the forms the schema allows "
                "(it must match exactly one)"),
    (re.compile(r"^Additional properties are not allowed \((?P<names>.*) (?:was|were) "
                r"unexpected\)$"), "has {names}, which the schema does not allow here"),
    (re.compile(r'^(?P<value>.*) is not one of (?P<allowed>.*)$'), "is {value}, but must be "
                "{allowed}"),
    (re.compile(r"^(?P<value>.*) was expected$"), "must be {value}"),
)  # fmt: skip


def plain(message: str) -> str:
    """A validator's message in plain words, to follow the path it is about (``prompt is "hi",
    not an array``; ``lacks "sessionId"``). Messages it does not know are kept as they are."""
    for pattern, words in _PLAIN:
        found = pattern.match(message)
        if found is None:
            continue
        parts = found.groupdict()
        if "types" in parts:
            names = [_TYPE_WORDS.get(t, t) for t in re.findall(r'"([^"]*)"', parts["types"])]
            parts["types"] = " or ".join(names)
        if "names" in parts:
            parts["names"] = ", ".join(f'"{n}"' for n in re.findall(r"'([^']*)'", parts["names"]))
        return words.format(**parts)
    return f"is invalid: {message}"


def _path(prefix: str, parts: Any) -> str:
    path = prefix
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "it"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
