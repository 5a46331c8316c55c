"""OpenAPI descriptions of the API's authentication schemes (drf-spectacular extensions).

Imported by ``webapp.api.urls`` so that the extensions register before the schema is built.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class CloudApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.accounts.authentication.CloudApiKeyAuthentication"
    name = "cloudApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "basic", "description": "A cloud API key as the user name and its secret as the password."}


class SessionScheme(OpenApiAuthenticationExtension):
    target_class = "webapp.accounts.authentication.SessionActorAuthentication"
    name = "session"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "cookie", "name": "sessionid", "description": "The dashboard's session; unsafe methods need the X-CSRFToken header."}
