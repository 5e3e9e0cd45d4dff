"""What the reverse proxy passes on and records of HTTP headers."""

from __future__ import annotations

from acp_proxy.remote.headers import end_to_end, is_credential, recordable


def test_hop_by_hop_headers_and_those_connection_names_are_dropped() -> None:
    headers = [
        (b"Host", b"proxy:1"), (b"Connection", b"keep-alive, X-Hop"), (b"X-Hop", b"1"),
        (b"Keep-Alive", b"5"), (b"Transfer-Encoding", b"chunked"), (b"Content-Length", b"3"),
        (b"Acp-Connection-Id", b"c1"), (b"X-Trace", b"a"), (b"x-trace", b"b"),
        (b"Authorization", b"Bearer t"),
    ]  # fmt: skip
    assert end_to_end(headers) == [
        (b"Acp-Connection-Id", b"c1"), (b"X-Trace", b"a"), (b"x-trace", b"b"),
        (b"Authorization", b"Bearer t"),
    ]  # fmt: skip


def test_credentials_are_recorded_as_null_unless_asked() -> None:
    headers = [(b"Authorization", b"Bearer t"), (b"Cookie", b"a=b"), (b"X-Auth-Token", b"s"),
               (b"Acp-Session-Id", b"s1"), (b"Accept", b"text/event-stream")]  # fmt: skip
    assert recordable(headers) == [
        ["authorization", None], ["cookie", None], ["x-auth-token", None],
        ["acp-session-id", "s1"], ["accept", "text/event-stream"],
    ]  # fmt: skip
    assert recordable(headers, credentials=True)[0] == ["authorization", "Bearer t"]
    assert not is_credential(b"Acp-Connection-Id")
