"""Partial pages: HTML fragments that the dashboard's script fetches to refresh part of a page
(a topic's replication table, the brokers table) are not pages of their own.

A browser marks a navigation (a typed address, a followed link, a bookmark) with
``Sec-Fetch-Mode: navigate``; the script's ``fetch()`` does not. A navigation to a fragment
is redirected to the full page that holds it, at the fragment's anchor, instead of showing
an unstyled table. Other clients (no ``Sec-Fetch-*`` headers) get the fragment as before.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

View = Callable[..., HttpResponse]


def is_navigation(request: HttpRequest) -> bool:
    """The request is a browser loading a page (not a script fetching part of one)."""
    return request.headers.get("Sec-Fetch-Mode") == "navigate"


def fragment_of(full_page: Callable[..., str]) -> Callable[[View], View]:
    """Serve the view's fragment to scripts; redirect a navigation to ``full_page(**kwargs)``
    (the URL of the page holding the fragment, with its anchor)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if is_navigation(request):
                return redirect(full_page(*args, **kwargs))
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
