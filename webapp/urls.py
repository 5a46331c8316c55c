"""URL map of the control plane: REST API, OpenAPI, dashboard, Django admin, health and metrics.

An unexpected error answers with the request id only (``handler500``, webapp.error_pages).
"""

from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from webapp.observability import views as observability

handler500 = "webapp.error_pages.server_error"

urlpatterns = [
    path("healthz", observability.healthz, name="healthz"),
    path("readyz", observability.readyz, name="readyz"),
    path("metrics", observability.metrics, name="metrics"),
    path("api/v1/", include("webapp.api.urls")),
    # Confluent Schema Registry's API, one registry per tenant (HTTP Basic with a cloud API key).
    path("schema-registry/", include("webapp.schemas.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI from the sidecar's static files, its start-up script a separate file (no inline
    # script or style: the Content-Security-Policy allows this site's files only).
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="api_docs/swagger_ui.html"), name="api-docs"),
    # Browsers ask for /favicon.ico whatever the page links.
    path("favicon.ico", RedirectView.as_view(url=static("dashboard/favicon.svg"), permanent=True), name="favicon"),
    path("admin/", admin.site.urls),
    path("", include("webapp.dashboard.urls")),
]
