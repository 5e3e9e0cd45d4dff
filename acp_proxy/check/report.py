"""Pure formatting of ``check`` findings and ``diff`` results: text, JSON, JUnit XML, SARIF.

Rules:
- Text names each frame (connection, ``#seq``, direction), the rule with its severity, what is
  wrong, and the fix; one finding per two lines, then one summary line.
- JSON is one object (``connections``, ``rules``, ``findings``, ``summary``) for machines.
- JUnit XML has one testsuite per connection and one testcase per enabled rule, failed when
  the rule found something (``type`` is the severity); XML-invalid characters from peer
  content are replaced, so CI parsers accept the file.
- SARIF is version 2.1.0, as code-scanning tools read it (``render_sarif``): one run, the
  enabled rules as the driver's rules, one result per finding whose location is the recording
  it was found in (a file as given, or the database) and, as a logical location, the
  connection and frame (``connection 3 #12 a2c``). A stable fingerprint (rule, recording,
  connection uid, seq, message) lets a tool tell a new finding from an old one.
- ``finding_line`` is the one-line form for ``record --check`` on stderr.
- Recorded text in a report is made visible (``display.visible``; in JSON, ``json_visible``
  keeps the value): reports go to terminals.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.check.budgets import LATENCY_RULE
from acp_proxy.check.engine import RULES, Finding, RuleInfo
from acp_proxy.display import json_visible, visible
from acp_proxy.plural import counted
from acp_proxy.protocol.diffing import Diff, Item

_INFO: dict[str, RuleInfo] = {info.id: info for info in (*RULES, LATENCY_RULE)}
_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True, slots=True)
class Checked:
    """One checked connection and what was found in it."""

    connection_id: int
    label: str | None
    protocol_version: int | None
    frames: int
    findings: list[Finding]


def finding_line(finding: Finding) -> str:
    where = f"connection {finding.connection_id} " if finding.connection_id is not None else ""
    frame = f"#{finding.seq} {finding.direction}" if finding.seq is not None else "end"
    return f"{where}{frame}: {finding.severity} {finding.rule}: {visible(finding.message)}"


def _summary(checked: Sequence[Checked]) -> dict[str, int]:
    findings = [f for c in checked for f in c.findings]
    return {
        "connections": len(checked),
        "frames": sum(c.frames for c in checked),
        "errors": sum(f.severity == "error" for f in findings),
        "warnings": sum(f.severity == "warning" for f in findings),
    }


def render_text(checked: Sequence[Checked], rules: Sequence[str]) -> str:
    lines = []
    for connection in checked:
        for finding in connection.findings:
            lines.append(finding_line(finding))
            lines.append(f"    fix: {_INFO[finding.rule].fix}")
    s = _summary(checked)
    scope = (
        f"{counted(s['connections'], 'connection')}, {counted(s['frames'], 'frame')}, "
        f"{counted(len(rules), 'rule')}"
    )
    if s["errors"] or s["warnings"]:
        lines.append(
            f"{counted(s['errors'], 'error')}, {counted(s['warnings'], 'warning')} in {scope}"
        )
    else:
        lines.append(f"clean: {scope}")
    return "\n".join(lines) + "\n"


def render_json(checked: Sequence[Checked], rules: Sequence[str], schemas: str | None) -> str:
    document: dict[str, Any] = {
        "connections": [
            {"connection_id": c.connection_id, "label": c.label,
             "protocol_version": c.protocol_version, "frames": c.frames}
            for c in checked
        ],
        "rules": list(rules),
        "schemas": schemas,
        "findings": [
            {"connection_id": f.connection_id, "seq": f.seq, "direction": f.direction,
             "rule": f.rule, "severity": f.severity, "message": f.message,
             "fix": _INFO[f.rule].fix, "source": _INFO[f.rule].source}
            for c in checked for f in c.findings
        ],
        "summary": _summary(checked),
    }  # fmt: skip
    return json_visible(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()) + "\n"


def _clean(text: str) -> str:
    return _XML_INVALID.sub("\ufffd", visible(text, lines=True))


def render_junit(checked: Sequence[Checked], rules: Sequence[str]) -> str:
    root = ET.Element("testsuites", name="acp-proxy check")
    total = failed = 0
    for connection in checked:
        name = f"connection {connection.connection_id}"
        if connection.label:
            name += f" ({connection.label})"
        suite = ET.SubElement(root, "testsuite", name=_clean(name))
        by_rule: dict[str, list[Finding]] = {}
        for finding in connection.findings:
            by_rule.setdefault(finding.rule, []).append(finding)
        for rule in rules:
            info = _INFO[rule]
            case = ET.SubElement(
                suite, "testcase", classname=f"acp-proxy.connection-{connection.connection_id}",
                name=f"{rule} {info.summary}",
            )  # fmt: skip
            found = by_rule.get(rule)
            if found:
                failure = ET.SubElement(
                    case, "failure", type=found[0].severity,
                    message=_clean(f"{counted(len(found), 'finding')}: {found[0].message}"),
                )  # fmt: skip
                failure.text = _clean(
                    "\n".join(finding_line(f) for f in found) + f"\nfix: {info.fix}"
                    + f"\nsource: {info.source}"
                )  # fmt: skip
        suite.set("tests", str(len(rules)))
        suite.set("failures", str(len(by_rule)))
        suite.set("errors", "0")
        total += len(rules)
        failed += len(by_rule)
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVELS = {"error": "error", "warning": "warning"}


@dataclass(frozen=True, slots=True)
class Source:
    """Where a checked connection came from, for SARIF: the recording's uri and the uid."""

    uri: str
    uid: str | None = None


def render_sarif(
    checked: Sequence[Checked], rules: Sequence[str], sources: Sequence[Source], version: str
) -> str:
    """The findings as a SARIF 2.1.0 log (see the module rules); ``sources`` pairs ``checked``."""
    import hashlib

    index = {rule: n for n, rule in enumerate(rules)}
    driver_rules = []
    for rule in rules:
        info = _INFO[rule]
        driver_rules.append({
            "id": rule, "name": rule,
            "shortDescription": {"text": info.summary},
            "fullDescription": {"text": f"{info.summary} (source: {info.source})"},
            "help": {"text": f"fix: {info.fix}"},
            "defaultConfiguration": {"level": _LEVELS.get(info.severity, "note")},
            "properties": {"source": info.source},
        })  # fmt: skip
    results = []
    artifacts: dict[str, int] = {}
    for connection, source in zip(checked, sources, strict=True):
        artifact = artifacts.setdefault(source.uri, len(artifacts))
        for finding in connection.findings:
            frame = f"#{finding.seq} {finding.direction}" if finding.seq is not None else "end"
            where = f"connection {connection.connection_id} {frame}"
            stable = "\0".join([
                finding.rule, source.uri, source.uid or str(connection.connection_id),
                str(finding.seq), finding.message,
            ])  # fmt: skip
            result: dict[str, Any] = {
                "ruleId": finding.rule,
                "level": _LEVELS.get(finding.severity, "note"),
                "message": {"text": visible(f"{where}: {finding.message}")},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": source.uri, "index": artifact},
                    },
                    "logicalLocations": [{"name": where, "kind": "object"}],
                }],
                "partialFingerprints": {
                    "acpProxyFinding/v1": hashlib.sha256(stable.encode()).hexdigest(),
                },
            }  # fmt: skip
            if finding.rule in index:
                result["ruleIndex"] = index[finding.rule]
            results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "acp-proxy check", "version": version,
                "informationUri": "https://agentclientprotocol.com",
                "rules": driver_rules,
            }},
            "artifacts": [{"location": {"uri": uri}} for uri in artifacts],
            "results": results,
        }],
    }  # fmt: skip
    return json_visible(orjson.dumps(log, option=orjson.OPT_INDENT_2).decode()) + "\n"


def _show(item: Item | None, width: int = 160) -> str:
    if item is None:
        return "(nothing: the recording ends here)"
    text = item.text if len(item.text) <= width else item.text[: width - 1] + "…"
    return f"#{item.seq} {visible(text)}"


def render_diff_text(diff: Diff, names: tuple[str, str]) -> str:
    counts = ", ".join(f"{d} {a}/{b}" for d, (a, b) in diff.counts.items())
    if diff.divergence is None:
        return f"same: {counts} messages (A/B)\n"
    d = diff.divergence
    lines = [f"differ: first divergence in {d.direction} message {d.index + 1} "
             f"({counts} messages A/B)"]  # fmt: skip
    for item in d.context:
        lines.append(f"    {_show(item)}")
    lines.append(f"  A {visible(names[0])} {_show(d.a)}")
    lines.append(f"  B {visible(names[1])} {_show(d.b)}")
    if d.path is not None:
        lines.append(f"  first difference at {d.path}")
    return "\n".join(lines) + "\n"


def render_diff_json(diff: Diff) -> str:
    def item(i: Item | None) -> Any:
        return None if i is None else {"seq": i.seq, "index": i.index, "message": i.text}

    d = diff.divergence
    document = {
        "equal": diff.equal,
        "counts": {k: {"a": a, "b": b} for k, (a, b) in diff.counts.items()},
        "divergence": None if d is None else {
            "direction": d.direction, "index": d.index, "a": item(d.a), "b": item(d.b),
            "path": d.path, "context": [item(c) for c in d.context],
        },
    }  # fmt: skip
    return json_visible(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()) + "\n"
