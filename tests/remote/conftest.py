"""The real peers of tests/integration (the SDKs' examples on disk), for the remote tests; the
Python SDK's examples come from tests/conftest.py, shared by every folder."""

from tests.integration.conftest import node, ts_sdk

__all__ = ["node", "ts_sdk"]
