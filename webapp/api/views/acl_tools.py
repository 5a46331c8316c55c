"""``POST /acls:apply-template`` (the bindings of a producer, consumer or transactional producer
in one step) and ``GET /acls:explain`` (can P do O on R, and which binding decides)."""

from __future__ import annotations

from dataclasses import asdict

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import Actor, Role
from webapp.api.permissions import HasRequiredRole, IsTenantMember
from webapp.api.query import validated_query
from webapp.api.serializers.acl_tools import AclExplainQuerySerializer, AclExplanationSerializer, AclTemplateResultSerializer, AclTemplateSerializer
from webapp.api.serializers.acls import AclSerializer
from webapp.api.serializers.common import job_summary
from webapp.api.views.base import BaseApiView
from webapp.catalog.facade import check_access_question, check_acl_template, do_apply_acl_template, explain_access


class _TenantAclView(BaseApiView):
    permission_classes = [IsTenantMember, HasRequiredRole]
    required: str = Role.VIEWER

    def required_role(self, request: Request) -> str:
        return self.required

    @property
    def actor(self) -> Actor:
        user = self.request.user
        assert isinstance(user, Actor), "IsTenantMember admits only actors"
        return user

    def acl_data(self, bindings: object, many: bool = True) -> object:
        return AclSerializer(bindings, many=many, context={"request": self.request, "tenant_public_id": self.actor.tenant.public_id}).data


class AclTemplateView(_TenantAclView):
    required = Role.ADMIN

    @extend_schema(request=AclTemplateSerializer, responses={201: AclTemplateResultSerializer})
    def post(self, request: Request) -> Response:
        payload = AclTemplateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        template = payload.validated_data["template"]
        bindings = check_acl_template(self.actor, **payload.validated_data)
        result = do_apply_acl_template(self.actor, template, bindings, self.request_id)
        body = {"created": self.acl_data(result.created), "existing": [asdict(binding) for binding in result.existing], "job": job_summary(result.job, request)}
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class AclExplainView(_TenantAclView):
    @extend_schema(parameters=[AclExplainQuerySerializer], responses={200: AclExplanationSerializer})
    def get(self, request: Request) -> Response:
        query = validated_query(AclExplainQuerySerializer, request).validated_data
        question = check_access_question(**{**query, "host": query.get("host") or ""})
        explanation = explain_access(self.actor, question)
        deciding = self.acl_data(explanation.binding, many=False) if explanation.binding is not None else None
        return Response({"allowed": explanation.allowed, "implied": explanation.implied, "reason": explanation.reason, "deciding_acl": deciding})
