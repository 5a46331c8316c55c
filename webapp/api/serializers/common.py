"""Pieces every resource shape uses: links and the job a mutation started."""

from __future__ import annotations

import re
from datetime import datetime, tzinfo
from typing import Any

from django.utils import timezone
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.reverse import reverse

from webapp.provisioning.facade import ProvisioningJob


class ResourceMetadataSerializer(serializers.Serializer):
    """Confluent's ``metadata``: the resource's own URL and its resource name."""

    self = serializers.URLField()
    resource_name = serializers.CharField()


class RelatedLinkSerializer(serializers.Serializer):
    related = serializers.URLField()


class JobSummarySerializer(serializers.Serializer):
    """The provisioning job a mutation started: follow ``self`` until ``state`` is final."""

    id = serializers.CharField(source="public_id")
    kind = serializers.CharField()
    state = serializers.CharField()
    target = serializers.CharField()
    self = serializers.SerializerMethodField()

    def get_self(self, job: ProvisioningJob) -> str:
        return link(self.context["request"], "api:job-detail", public_id=job.public_id)


class JobResponseSerializer(serializers.Serializer):
    """The body of a mutation that returns only its job (HTTP 202)."""

    job = JobSummarySerializer(allow_null=True)


class NameFilterSerializer(serializers.Serializer):
    """``?name=``: only resources whose name contains this text (any case)."""

    name = serializers.CharField(required=False, max_length=300, help_text="Only those whose name contains this text (any case).")


# Values that stand for a link's arguments while its template is reversed: digits only, so
# that they match every URL pattern of the API (names, ids and partition numbers alike).
_PLACEHOLDER = "90817263545{}"
# Values put into a template as they are: reverse() would neither quote nor change them.
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9._~-]+")


class LinkTemplate:
    """The absolute URL of one route with its arguments left open, reversed once per request.

    A page of resources links each of them: reversing every link costs more than the rest of
    the page (each call walks the resolver and Django's thread-local URL configuration). The
    route is reversed once with placeholder arguments and split around them; each link then
    joins the pieces with its values. A value that is not plain URL characters (or holds a
    placeholder) goes through ``reverse`` itself, which quotes it, so every link is what DRF's
    ``reverse`` gives. Built by :func:`link_template`; not shared between requests.
    """

    __slots__ = ("_request", "_name", "_keys", "_pieces", "_order")

    def __init__(self, request: Request, name: str, keys: tuple[str, ...]) -> None:
        self._request = request
        self._name = name
        self._keys = keys
        template = reverse(name, kwargs={key: _PLACEHOLDER.format(index) for index, key in enumerate(keys)}, request=request)
        # Where each argument sits in the URL (the route's order, not the keys'), then the text
        # around them: len(keys) + 1 pieces.
        found = sorted((template.index(_PLACEHOLDER.format(index)), index) for index in range(len(keys)))
        self._order = tuple(index for _, index in found)
        pieces, position = [], 0
        for start, index in found:
            pieces.append(template[position:start])
            position = start + len(_PLACEHOLDER.format(index))
        pieces.append(template[position:])
        self._pieces = tuple(pieces)

    def __call__(self, *values: Any) -> str:
        """The link with these values, in the order of the keys the template was made with."""
        texts = [str(value) for value in values]
        for text in texts:
            if not _PLAIN_VALUE.fullmatch(text) or _PLACEHOLDER[:-2] in text:
                return reverse(self._name, kwargs=dict(zip(self._keys, values, strict=True)), request=self._request)
        pieces = self._pieces
        if len(texts) == 1:
            return pieces[0] + texts[0] + pieces[1]
        parts = [pieces[0]]
        for position, index in enumerate(self._order):
            parts.append(texts[index])
            parts.append(pieces[position + 1])
        return "".join(parts)


def link_template(request: Request, name: str, *keys: str) -> LinkTemplate:
    """This request's template of route ``name`` with arguments ``keys`` (made on first use)."""
    templates: dict[tuple[str, tuple[str, ...]], LinkTemplate] = request.__dict__.setdefault("_weir_link_templates", {})
    template = templates.get((name, keys))
    if template is None:
        template = templates[(name, keys)] = LinkTemplate(request, name, keys)
    return template


def link(request: Request, name: str, **kwargs: Any) -> str:
    """The absolute URL of the route ``name`` with ``kwargs``, as DRF's ``reverse`` gives it,
    from this request's :class:`LinkTemplate` of the route. A serializer that links every item
    of a page keeps the template (:func:`link_template`) instead."""
    return link_template(request, name, *kwargs)(*kwargs.values())


def job_summary(job: ProvisioningJob | None, request: Request) -> dict[str, Any] | None:
    return JobSummarySerializer(job, context={"request": request}).data if job is not None else None


def resource_name(tenant_public_id: str, *parts: str) -> str:
    """A Confluent-style resource name: ``crn://weir/tenant=tn-.../topic=orders``."""
    return "crn://weir/tenant=" + tenant_public_id + "".join("/" + part for part in parts)


class Timestamps:
    """Datetimes as DRF's ``DateTimeField`` renders them with the default ISO 8601 format (in
    the current time zone, ``Z`` for UTC), the zone looked up once rather than per value: a page
    of resources renders hundreds of them, and each field's own lookup went through Django's
    thread-local time zone every time."""

    def __init__(self) -> None:
        self._zone: tzinfo | None = None

    def __call__(self, value: datetime | None) -> str | None:
        if not value:
            return None
        if self._zone is None:
            self._zone = timezone.get_current_timezone()
        if timezone.is_aware(value):
            value = value.astimezone(self._zone)
        text = value.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
