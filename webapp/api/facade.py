"""What other modules may use of the REST API: the body of a server error, which the project's
error pages (``webapp.error_pages``) answer API clients with. No app imports the API."""

from __future__ import annotations

from webapp.api.errors import server_error_body

__all__ = ["server_error_body"]
