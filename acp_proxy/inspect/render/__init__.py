"""Renderers of recordings and transcripts: terminal text, Markdown, HTML.

Pure functions of values: they never read the database themselves.
"""
