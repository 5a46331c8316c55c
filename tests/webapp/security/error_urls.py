"""The project's URLs plus two views that fail while holding credentials (the error-report tests)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path

from webapp.urls import handler500  # noqa: F401  (the project's 500 answer applies here too)
from webapp.urls import urlpatterns as project_urlpatterns

# Values that must never appear in any report of the failure below.
TENANT_TOKEN = "tenant-token-value-7f3a9c"
SASL_PASSWORD = "sasl-password-value-91b2"
SSL_KEY_PASSWORD = "ssl-key-password-value-44d0"
API_SECRET = "api-secret-value-c0ffee"
EXCEPTION_TEXT = "snappy payload of partition 0 at offset 7 is invalid"


@dataclass
class Credentials:
    key_id: str
    secret: str


def secret_values() -> list[str]:
    return [settings.WEIR_INTERNAL_TOKEN, settings.SECRET_KEY, TENANT_TOKEN, SASL_PASSWORD, SSL_KEY_PASSWORD, API_SECRET]


def failing_view(request: HttpRequest) -> HttpResponse:
    """Fails the way the message browser did: while a client configuration is a local."""
    config = {
        "weir.internal.token": settings.WEIR_INTERNAL_TOKEN,
        "weir.tenant.token": TENANT_TOKEN,
        "sasl.password": SASL_PASSWORD,
        "ssl.key.password": SSL_KEY_PASSWORD,
    }
    metadata = [("x-weir-internal-token", settings.WEIR_INTERNAL_TOKEN)]
    nested = {"clients": [{"producer": config}], "metadata": metadata}
    credentials = Credentials(key_id="key-1", secret=API_SECRET)
    line = f"authorization: Bearer {settings.WEIR_INTERNAL_TOKEN}"
    # A large payload with the token just inside the shown part and again far beyond it.
    payload = "x" * 8000 + settings.WEIR_INTERNAL_TOKEN + "y" * 100_000 + settings.WEIR_INTERNAL_TOKEN
    assert config and metadata and nested and credentials and line and payload
    raise RuntimeError(EXCEPTION_TEXT)


urlpatterns = [
    path("fails/", failing_view),
    path("api/v1/fails", failing_view),
    *project_urlpatterns,
]
