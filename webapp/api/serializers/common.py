"""Pieces every resource shape uses: links and the job a mutation started."""

from __future__ import annotations

from typing import Any

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


def link(request: Request, name: str, **kwargs: Any) -> str:
    return reverse(name, kwargs=kwargs, request=request)


def job_summary(job: ProvisioningJob | None, request: Request) -> dict[str, Any] | None:
    return JobSummarySerializer(job, context={"request": request}).data if job is not None else None


def resource_name(tenant_public_id: str, *parts: str) -> str:
    """A Confluent-style resource name: ``crn://weir/tenant=tn-.../topic=orders``."""
    return "crn://weir/tenant=" + tenant_public_id + "".join("/" + part for part in parts)
