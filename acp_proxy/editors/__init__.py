"""Putting ``acp-proxy record`` in front of an agent in an editor's settings, and taking it out."""
