"""Cursor pagination for every list endpoint: stable under inserts, no page counting."""

from __future__ import annotations

from rest_framework import pagination


class CursorPagination(pagination.CursorPagination):
    """``?cursor=...&page_size=N`` (at most 500); responses carry ``next`` / ``previous`` links.

    Ordered by creation by default; a view may set ``ordering``.
    """

    page_size_query_param = "page_size"
    max_page_size = 500
    ordering = "-created_at"
