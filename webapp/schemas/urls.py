"""Routes of the registry under ``/schema-registry/`` (Confluent's paths). A subject may contain
``/`` (sent as ``%2F``, decoded before routing): subject patterns match greedily and the
suffix-specific routes come first."""

from __future__ import annotations

from django.urls import re_path

from webapp.schemas import views
from webapp.schemas.http import not_found

SUBJECT = r"(?P<subject>.+)"
VERSION = r"(?P<version>[^/]+)"
SCHEMA_ID = r"(?P<schema_id>[0-9]{1,12})"

app_name = "schemas"
urlpatterns = [
    re_path(r"^$", views.root_view, name="root"),
    re_path(r"^subjects$", views.subjects_view, name="subjects"),
    re_path(rf"^subjects/{SUBJECT}/versions/{VERSION}/schema$", views.version_schema_view, name="version-schema"),
    re_path(rf"^subjects/{SUBJECT}/versions/{VERSION}/referencedby$", views.referenced_by_view, name="referenced-by"),
    re_path(rf"^subjects/{SUBJECT}/versions/{VERSION}$", views.version_view, name="version"),
    re_path(rf"^subjects/{SUBJECT}/versions$", views.versions_view, name="versions"),
    re_path(rf"^subjects/{SUBJECT}$", views.subject_view, name="subject"),
    re_path(r"^schemas/types$", views.schema_types_view, name="schema-types"),
    re_path(rf"^schemas/ids/{SCHEMA_ID}$", views.schema_view, name="schema"),
    re_path(rf"^schemas/ids/{SCHEMA_ID}/schema$", views.schema_text_view, name="schema-text"),
    re_path(rf"^schemas/ids/{SCHEMA_ID}/versions$", views.schema_versions_view, name="schema-versions"),
    re_path(rf"^schemas/ids/{SCHEMA_ID}/subjects$", views.schema_subjects_view, name="schema-subjects"),
    re_path(r"^contexts$", views.contexts_view, name="contexts"),
    re_path(r"^config$", views.config_view, name="config"),
    re_path(rf"^config/{SUBJECT}$", views.config_view, name="subject-config"),
    re_path(r"^mode$", views.mode_view, name="mode"),
    re_path(rf"^mode/{SUBJECT}$", views.subject_mode_view, name="subject-mode"),
    re_path(rf"^compatibility/subjects/{SUBJECT}/versions/{VERSION}$", views.compatibility_view, name="compatibility-version"),
    re_path(rf"^compatibility/subjects/{SUBJECT}/versions$", views.compatibility_view, name="compatibility"),
    re_path(r"^(?P<rest>.*)$", not_found),
]
