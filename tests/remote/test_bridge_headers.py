"""The bridge's headers: expanded from the environment, refused when malformed, never recorded."""

from __future__ import annotations

import pytest

from acp_proxy.remote.bridge_headers import (
    SCRUBBED,
    HeaderError,
    parse_header,
    recorded_url,
    scrub_header_values,
    transport_of,
)

ENV = {"TOKEN": "s3cret", "USER_ID": "42"}


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        ("Authorization: Bearer $TOKEN", ("Authorization", "Bearer s3cret")),
        ("X-Ids: ${USER_ID}-$USER_ID", ("X-Ids", "42-42")),
        ("X-Price: $$5", ("X-Price", "$5")),
        ("X-Plain:value", ("X-Plain", "value")),
        ("  X-Spaces :  padded  ", ("X-Spaces", "padded")),
        ("X-Empty:", ("X-Empty", "")),
    ],
)
def test_a_header_is_expanded_from_the_environment(option: str, expected: tuple[str, str]) -> None:
    assert parse_header(option, ENV) == expected


@pytest.mark.parametrize(
    ("option", "says"),
    [
        ("Authorization Bearer x", "give it as 'NAME: VALUE'"),
        ("Bad Name: x", "give it as 'NAME: VALUE'"),
        (": x", "give it as 'NAME: VALUE'"),
        ("Authorization: Bearer $MISSING", "the variable MISSING is not set"),
    ],
)
def test_a_malformed_header_is_refused(option: str, says: str) -> None:
    with pytest.raises(HeaderError, match=says):
        parse_header(option, ENV)


def test_a_value_that_would_split_the_request_is_refused() -> None:
    with pytest.raises(HeaderError, match="line break"):
        parse_header("X-Evil: $TOKEN", {"TOKEN": "a\r\nInjected: yes"})


@pytest.mark.parametrize(
    ("url", "transport"),
    [("http://h/acp", "http"), ("HTTPS://h:8443/acp", "http"), ("ws://h/acp", "ws"),
     ("wss://h/acp", "ws")],
)  # fmt: skip
def test_the_scheme_chooses_the_transport(url: str, transport: str) -> None:
    assert transport_of(url) == transport


@pytest.mark.parametrize("url", ["ftp://h/acp", "http:///acp", "localhost:8000", "http://[::1"])
def test_other_urls_are_refused(url: str) -> None:
    with pytest.raises(HeaderError, match="--connect"):
        transport_of(url)


def test_the_recorded_url_keeps_no_credentials() -> None:
    url = "https://user:pw@Example.com:8443/team/acp?token=abc#frag"
    assert recorded_url(url) == "https://example.com:8443/team/acp"
    assert recorded_url("ws://[::1]:9/acp") == "ws://[::1]:9/acp"


def test_header_values_are_scrubbed_from_a_command_line() -> None:
    argv = ["client", "acp-proxy", "record", "--header", "Authorization: Bearer s3cret",
            "--header=X-Key: abc", "--connect", "https://h/acp", "--header", "broken"]  # fmt: skip
    assert scrub_header_values(argv) == [
        "client", "acp-proxy", "record", "--header", f"Authorization: {SCRUBBED}",
        f"--header=X-Key: {SCRUBBED}", "--connect", "https://h/acp", "--header", SCRUBBED,
    ]  # fmt: skip
