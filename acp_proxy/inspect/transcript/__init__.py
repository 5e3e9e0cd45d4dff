"""Sans-I/O transcript model: a connection's frames applied in order.

What it gives is what a client would render; it never re-derives a frame's meaning.
"""
