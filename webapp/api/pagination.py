"""Cursor pagination for every list endpoint: stable under inserts, no page counting.

Bad paging parameters are refused, never silently replaced by defaults: a ``page_size``
that is not an integer from 1 to 500 or is given twice, and a ``cursor`` that is not
base64, answer 400 naming the parameter. A cursor that decodes but leads nowhere in this
list (edited by hand, or from another list) answers 404: that page does not exist.
"""

from __future__ import annotations

import binascii
import re
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, pagination
from rest_framework.request import Request

from webapp.api.query import single_value

# What DRF's cursors are made of: standard base64 with padding.
CURSOR_PATTERN = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
MAX_PAGE_SIZE = 500


class CursorPagination(pagination.CursorPagination):
    """``?cursor=...&page_size=N`` (1 to 500); responses carry ``next`` / ``previous`` links.

    Ordered by creation by default; a view may set ``ordering``.
    """

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE
    ordering = "-created_at"

    def get_page_size(self, request: Request) -> int:
        text = single_value(request.query_params, self.page_size_query_param)
        if text is None:
            return self.page_size
        if not re.fullmatch(r"[0-9]{1,4}", text) or not 1 <= int(text) <= self.max_page_size:
            raise exceptions.ValidationError({self.page_size_query_param: [f"An integer from 1 to {self.max_page_size}."]})
        return int(text)

    def decode_cursor(self, request: Request) -> Any:
        text = single_value(request.query_params, self.cursor_query_param)
        if text is not None and not re.fullmatch(CURSOR_PATTERN, text):
            raise exceptions.ValidationError({self.cursor_query_param: ["Not a cursor: use a next or previous link as it is."]})
        try:
            return super().decode_cursor(request)
        except (binascii.Error, UnicodeDecodeError):
            raise exceptions.NotFound(self.invalid_cursor_message) from None

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> Any:
        try:
            return super().paginate_queryset(queryset, request, view)
        except (DjangoValidationError, ValueError, OverflowError):
            # The cursor decoded, but its position is not a value of the ordering field.
            raise exceptions.NotFound(self.invalid_cursor_message) from None

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"].update({"minimum": 1, "maximum": self.max_page_size})
                parameter["description"] = f"Results per page, 1 to {self.max_page_size} (default {self.page_size})."
            elif parameter["name"] == self.cursor_query_param:
                parameter["schema"]["pattern"] = CURSOR_PATTERN
                parameter["description"] = "The cursor of a next or previous link, as it is."
        return parameters
