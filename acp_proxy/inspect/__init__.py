"""Reading a recording for people: the transcript model, renderers, export, Datasette metadata.

Rules: read-only; recorded text is data: control characters made visible in a terminal, escaped
in Markdown and HTML.
"""
