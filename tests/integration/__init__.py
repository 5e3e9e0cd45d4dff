"""Integration tests that drive real ACP peers (see conftest.py)."""
