"""The real peers of tests/integration (the SDKs' examples on disk), for the remote tests."""

from tests.integration.conftest import node, peers_dir, python_examples, ts_sdk

__all__ = ["node", "peers_dir", "python_examples", "ts_sdk"]
