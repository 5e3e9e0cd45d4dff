"""The recording database: schema and migrations, the writer, REF resolution, readers, import.

Rules: the only package that speaks SQL; every file it creates is private to the user;
docs/recording-format.md is the contract of what it writes.
"""
