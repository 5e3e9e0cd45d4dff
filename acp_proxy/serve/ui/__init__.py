"""``acp-proxy ui``: the live web inspector of a recording database.

Rules:
- Starlette on uvicorn, bound to loopback unless told otherwise; every request carries the
  random token of the address (``security.py``) and a known Host header.
- Read-only: the database is opened read-only and nothing served writes anything.
- Recorded text reaches the page as JSON data and is inserted as text (``textContent``), never
  as markup; the page runs only the package's own scripts (a CSP that names its one inline
  start-up script by hash and allows no other inline script).
- Every asset is package data (``static/``): the page needs no network.
"""
