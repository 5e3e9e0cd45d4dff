"""Sans-I/O rules on framing and JSON-RPC (schema validation, digest section 8 rules 1-7).

Rules:
- ACP000 validates each message against the schema definition of its own method and role
  (``schemas.SchemaBook``), for the connection's negotiated protocol version; it is silent
  when no schemas were given or the version has none.
- The others need no schema: they look at frame flags, ids and the pending requests.
- Each rule reports the frame that shows the problem; a request never answered is reported
  at the request, when the connection ends.
"""

from __future__ import annotations

from typing import Any

import orjson

from acp_proxy.check.base import ERROR, WARNING, Event, Rule, RuleInfo, get
from acp_proxy.protocol import acp
from acp_proxy.protocol.jsonrpc import Kind, envelope
from acp_proxy.protocol.observer import FrameRecord

_TRANSPORTS = "docs/protocol/v1/transports.mdx"
_KNOWN_CODES = frozenset({-32700, -32600, -32601, -32602, -32603, -32800, -32000, -32002})
_LIFECYCLE = frozenset(
    {"initialize", "auth/login", "session/new", "session/resume", "session/prompt"}
)
_NO_MESSAGE = frozenset({Kind.INVALID, Kind.BATCH})
_ROLES = {"request": "request", "notification": "notification", "response": "response"}


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _is_message(entry: Any) -> bool:
    """Whether a batch entry is a JSON-RPC message, by the one shape rule (jsonrpc.envelope)."""
    return isinstance(entry, dict) and envelope(entry).kind not in _NO_MESSAGE


def _both(entry: Any) -> bool:
    """A response with both members (JSON-RPC 2.0 forbids it; it is read as an error)."""
    return isinstance(entry, dict) and "result" in entry and "error" in entry


class Schema(Rule):
    info = RuleInfo(
        "ACP000", ERROR, "Every message matches the schema of its own method (and update kind)",
        "schema/v1|v2/schema(.unstable).json of @agentclientprotocol/sdk; digest 8 rule 8",
        "send the fields the method's definition requires, with the types it gives",
    )  # fmt: skip
    methods = None

    def message(self, event: Event) -> None:
        book = self.context.schemas
        role = _ROLES.get(event.kind)
        if book is None or role is None or event.method is None:
            return
        version = self.state.version
        if event.method == acp.INITIALIZE:
            payload = event.params if role == "request" else event.result
            version = acp.protocol_version(payload) or version
        if version is None:
            return
        instance = event.result if role == "response" else event.params
        problems = book.validate(version, role, event.method, event.update_kind, instance)
        if problems:
            what = event.method + (f" ({event.update_kind})" if event.update_kind else "")
            part = "result" if role == "response" else role
            details = "; ".join(f"{p.path} {p.message}" for p in problems)
            self.flag(
                event,
                f"the {what} {part} does not match the schema ({problems[0].definition}): "
                f"{details}",
            )


class OneMessagePerLine(Rule):
    info = RuleInfo(
        "ACP001", ERROR,
        "Every line is one complete UTF-8 JSON-RPC message; stdout carries only ACP",
        _TRANSPORTS, "write exactly one JSON-RPC message per line; send logs to stderr",
    )  # fmt: skip
    wants_frames = True

    def frame(self, record: FrameRecord, value: Any) -> None:
        if record.bad_utf8:
            problem = "is not UTF-8"
        elif record.bad_json:
            problem = "is not JSON" if record.raw.strip() else "is empty"
        elif record.kind == "invalid":
            problem = "is JSON but not a JSON-RPC message"
        elif record.no_newline:
            problem = "ends without a newline (the stream stopped mid-message)"
        elif isinstance(value, list) and not all(_is_message(e) for e in value):
            problem = "is a batch with an entry that is not a JSON-RPC message"
        elif _both(value) or (isinstance(value, list) and any(_both(e) for e in value)):
            problem = "has both result and error (JSON-RPC 2.0 allows one; read as an error)"
        else:
            return
        sample = record.raw[:60].decode("utf-8", "replace").rstrip("\r\n")
        more = "..." if len(record.raw.rstrip(b"\r\n")) > 60 else ""
        self.report(record.seq, record.direction, f"the line {problem}: {sample!r}{more}")


class JsonRpcVersion(Rule):
    info = RuleInfo(
        "ACP002", ERROR, 'Every message carries "jsonrpc": "2.0"',
        "JSON-RPC 2.0; top-level schema envelope", 'add "jsonrpc": "2.0" to every message',
    )  # fmt: skip
    wants_frames = True

    def frame(self, record: FrameRecord, value: Any) -> None:
        entries = value if isinstance(value, list) else [value]
        for entry in entries:
            if isinstance(entry, dict) and entry.get("jsonrpc") != "2.0":
                if "jsonrpc" not in entry:
                    text = 'the message has no "jsonrpc" member (it must be "2.0")'
                else:
                    found = _json_text(entry["jsonrpc"])
                    text = f'"jsonrpc" is {found}; it must be "2.0"'
                self.report(record.seq, record.direction, text)
                return


class V1Batch(Rule):
    info = RuleInfo(
        "ACP003A", ERROR, "v1 messages are single JSON-RPC objects, never batch arrays",
        _TRANSPORTS, "send each message on its own line (batches exist only in v2)",
    )  # fmt: skip
    wants_frames = True

    def frame(self, record: FrameRecord, value: Any) -> None:
        if isinstance(value, list) and value and self.state.v1:
            self.report(record.seq, record.direction, f"a batch of {len(value)} on a v1 connection")


class EmptyBatch(Rule):
    info = RuleInfo(
        "ACP003B", ERROR,
        "No empty batch (invalid), and no (empty) response array for an all-notification batch",
        "docs/protocol/v2/transports.mdx", "never send []; send nothing back for notifications",
    )  # fmt: skip
    wants_frames = True

    def frame(self, record: FrameRecord, value: Any) -> None:
        if value == []:
            self.report(record.seq, record.direction, "an empty batch array")


class LifecycleBatched(Rule):
    info = RuleInfo(
        "ACP003C", WARNING,
        "initialize, auth/login, session/new, session/resume, session/prompt are not batched",
        "docs/protocol/v2/transports.mdx (SHOULD NOT)", "send lifecycle requests on their own",
    )  # fmt: skip
    methods = _LIFECYCLE
    kinds = frozenset({"request"})

    def message(self, event: Event) -> None:
        if event.in_batch:
            self.flag(event, f"{event.method} sent inside a batch")


class Pairing(Rule):
    info = RuleInfo(
        "ACP004", ERROR,
        "Each request gets exactly one response with its id, from the other side; "
        "notifications get none",
        "docs/protocol/v1/overview.mdx (Error Handling); JSON-RPC 2.0",
        "answer every request once, with the request's exact id; never reuse a pending id",
    )  # fmt: skip
    methods = None

    def message(self, event: Event) -> None:
        if event.kind == "request":
            earlier = event.replaces
            if earlier is not None:
                self.flag(
                    event,
                    f"id {event.id!r} is already used by {earlier.method} #{earlier.seq}, "
                    "still unanswered",
                )
        elif event.kind in ("response", "error") and event.request is None:
            if event.kind == "error" and event.id is None:
                return  # the answer to a line that could not be parsed
            other = "client" if event.direction == "a2c" else "agent"
            self.flag(
                event,
                f"{event.kind} with id {event.id!r} answers no pending request of the {other} "
                "(a second response, a wrong id, or a reply to a notification)",
            )

    def finish(self) -> None:
        _report_unanswered(self, cancelled=False, says="request was never answered")


class CancelledStillAnswered(Rule):
    info = RuleInfo(
        "ACP005", ERROR,
        "After $/cancel_request the original request still gets a response (result or -32800)",
        "docs/protocol/v1/cancellation.mdx",
        "answer a cancelled request with its result or with error -32800",
    )  # fmt: skip

    def finish(self) -> None:
        _report_unanswered(self, cancelled=True, says="got $/cancel_request but never a response")


class ErrorObject(Rule):
    info = RuleInfo(
        "ACP006A", ERROR, "Error objects have an integer code and a string message",
        "ErrorCode / Error in the schemas; JSON-RPC 2.0",
        'send {"code": <integer>, "message": <string>}',
    )  # fmt: skip
    kinds = frozenset({"error"})
    methods = None

    def message(self, event: Event) -> None:
        code, text = get(event.error, "code"), get(event.error, "message")
        if not isinstance(code, int) or isinstance(code, bool):
            self.flag(event, f"error code {code!r} is not an integer")
        elif not isinstance(text, str):
            self.flag(event, f"error message {text!r} is not a string")


class ReservedErrorCode(Rule):
    info = RuleInfo(
        "ACP006B", WARNING,
        "Codes in JSON-RPC's reserved range (-32768..-32100) are ones ACP or JSON-RPC define",
        "ErrorCode in the schemas; JSON-RPC 2.0 (reserved for pre-defined errors)",
        "use a defined code, -32000..-32099 (server errors) or a code outside the range",
    )  # fmt: skip
    kinds = frozenset({"error"})
    methods = None

    def message(self, event: Event) -> None:
        code = get(event.error, "code")
        if isinstance(code, int) and -32768 <= code <= -32100 and code not in _KNOWN_CODES:
            self.flag(event, f"error code {code} is reserved by JSON-RPC and defined by no one")


class UnknownMethod(Rule):
    info = RuleInfo(
        "ACP007A", WARNING,
        "Custom methods start with _; other unknown names are reserved for future ACP methods",
        "docs/protocol/v1/extensibility.mdx", "prefix extension methods with _ (e.g. _vendor/x)",
    )  # fmt: skip
    kinds = frozenset({"request", "notification"})
    methods = None

    def message(self, event: Event) -> None:
        method = event.method or ""
        version = self.state.version
        if acp.is_extension_method(method) or acp.is_known_method(method, version):
            return
        book = self.context.schemas
        if book is not None and version is not None and method in book.methods(version):
            return
        self.flag(
            event,
            f"unknown method {method!r}: ACP has no such method, and extension methods start "
            "with _",
        )


class WrongDirection(Rule):
    info = RuleInfo(
        "ACP007B", ERROR, "A method is sent only to the side that handles it",
        "schema x-side; docs/protocol/v1/overview.mdx",
        "agent methods go client->agent, client methods agent->client",
    )  # fmt: skip
    kinds = frozenset({"request", "notification"})
    methods = None

    def message(self, event: Event) -> None:
        method = event.method or ""
        agent = method in acp.AGENT_METHODS_V1 or method in acp.AGENT_METHODS_V2
        client = method in acp.CLIENT_METHODS_V1 or method in acp.CLIENT_METHODS_V2
        if agent and not client and event.direction == "a2c":
            self.flag(event, f"{method} is handled by the agent, but the agent sent it")
        elif client and not agent and event.direction == "c2a":
            self.flag(event, f"{method} is handled by the client, but the client sent it")


FRAMING_RULES: tuple[type[Rule], ...] = (
    Schema, OneMessagePerLine, JsonRpcVersion, V1Batch, EmptyBatch, LifecycleBatched, Pairing,
    CancelledStillAnswered, ErrorObject, ReservedErrorCode, UnknownMethod, WrongDirection,
)  # fmt: skip


def _report_unanswered(rule: Rule, *, cancelled: bool, says: str) -> None:
    """At the end: every request still pending that was (or was not) cancelled."""
    for key, pending in rule.state.pending.items():
        if (key in rule.state.cancel_requested) == cancelled:
            rule.report(pending.seq, pending.direction, f"{pending.method} {says}")
