"""``acp-proxy ui``: the live web inspector of a recording database.

Rules:
- Starlette on uvicorn, bound to loopback unless told otherwise; every request carries the
  random token of the address (``security.py``) and a known Host header.
- Read-only: the database is opened read-only and nothing served writes anything.
- Recorded text reaches the page as JSON data and is inserted as text (``textContent``), never
  as markup; the page runs only the package's own script (a CSP without inline script).
- Every asset is package data (``static/``): the page needs no network.
"""
