"""Waiting for a state: the one poll with a deadline the tests use instead of a sleep.

Rules: a test waits for the state itself (a row committed, a flag raised, a request begun),
never for a guessed duration; the wait has a deadline and fails the test with ``what`` when it
passes, so a state that never comes is a failure, not a hang.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

WAIT_S = 20.0
POLL_S = 0.005

T = TypeVar("T")


def until(
    condition: Callable[[], T], what: str, timeout: float = WAIT_S, every: float = POLL_S
) -> T:
    """The first true value of ``condition()``, polled every ``every`` seconds; the test fails
    with "WHAT not within TIMEOUTs" when none comes in ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not within {timeout:g}s")
        time.sleep(every)
