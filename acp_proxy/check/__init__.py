"""Checking recordings against the ACP rules: the sans-I/O engine and rules, schemas, reports.

Rules: the engine and rules import no I/O; schemas come from the official npm package, loaded by
schema_files.py; findings are values, formatted only by report.py.
"""
