"""Sharing recordings safely: secret detection, redaction, verification, bug-report bundles.

Rules: detection, redaction and verification are sans-I/O; a bundle is written only after its own
verification passes.
"""
