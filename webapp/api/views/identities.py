"""``/service-accounts`` (admins manage, everyone reads) and ``/api-keys`` (secrets shown once)."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import (
    ApiKey,
    Role,
    ServiceAccount,
    check_create_key,
    check_service_account_fields,
    do_create_key,
    do_create_service_account,
    do_delete_service_account,
    do_revoke_key,
    do_update_service_account,
)
from webapp.api.query import validated_query
from webapp.api.serializers.accounts import (
    ApiKeyCreateSerializer,
    ApiKeyDetailSerializer,
    ApiKeyFilterSerializer,
    ApiKeySerializer,
    NewApiKeySerializer,
    RevokedApiKeySerializer,
    ServiceAccountCreateSerializer,
    ServiceAccountSerializer,
    ServiceAccountUpdateSerializer,
)
from webapp.api.serializers.common import JobResponseSerializer, NameFilterSerializer, job_summary
from webapp.api.views.base import CONFLICT, TenantScopedViewSet


class ServiceAccountViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    queryset = ServiceAccount.objects.all()
    serializer_class = ServiceAccountSerializer
    lookup_field = "public_id"
    lookup_url_kwarg = "service_account_id"
    write_role = Role.ADMIN

    def safely_get_queryset(self, queryset: QuerySet[ServiceAccount]) -> QuerySet[ServiceAccount]:
        if self.action != "list":
            return queryset
        name = validated_query(NameFilterSerializer, self.request).validated_data.get("name")
        return queryset.filter(name__icontains=name) if name else queryset

    @extend_schema(parameters=[NameFilterSerializer])
    def list(self, request: Request) -> Response:
        return super().list(request)

    @extend_schema(request=ServiceAccountCreateSerializer, responses={201: ServiceAccountSerializer, 409: CONFLICT})
    def create(self, request: Request) -> Response:
        payload = ServiceAccountCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        values = payload.validated_data
        check_service_account_fields(self.actor, values["display_name"], values["description"], values["role"])
        account = do_create_service_account(self.actor, values["display_name"], values["description"], values["role"])
        return Response(ServiceAccountSerializer(account).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=ServiceAccountUpdateSerializer, responses={200: ServiceAccountSerializer, 409: CONFLICT})
    def partial_update(self, request: Request, service_account_id: str) -> Response:
        account = self.get_object()
        payload = ServiceAccountUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        values = payload.validated_data
        name, description, role = values.get("display_name"), values.get("description"), values.get("role")
        check_service_account_fields(self.actor, name, description, role)
        updated = do_update_service_account(self.actor, account, name, description, role)
        return Response(ServiceAccountSerializer(updated).data)

    @extend_schema(responses={200: JobResponseSerializer})
    def destroy(self, request: Request, service_account_id: str) -> Response:
        job = do_delete_service_account(self.actor, self.get_object(), self.request_id)
        return Response({"job": job_summary(job, request)})


class ApiKeyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """Keys of the tenant (never their secrets). ``DELETE`` revokes: the key stays listed
    with ``state`` REVOKED, as an audit trail."""

    queryset = ApiKey.objects.all()
    serializer_class = ApiKeySerializer
    lookup_field = "key_id"
    lookup_url_kwarg = "api_key_id"
    write_role = Role.DEVELOPER

    def safely_get_queryset(self, queryset: QuerySet[ApiKey]) -> QuerySet[ApiKey]:
        queryset = queryset.select_related("owner_service_account", "owner_membership")
        if self.action == "retrieve":
            return queryset.prefetch_related("applications")
        if self.action != "list":
            return queryset
        query = validated_query(ApiKeyFilterSerializer, self.request).validated_data
        if query.get("state") == "ACTIVE":
            queryset = queryset.filter(revoked_at__isnull=True)
        elif query.get("state") == "REVOKED":
            queryset = queryset.filter(revoked_at__isnull=False)
        owner = query.get("owner")
        if owner:
            queryset = queryset.filter(owner_service_account__public_id=owner) | queryset.filter(owner_membership__public_id=owner)
        return queryset

    @extend_schema(parameters=[ApiKeyFilterSerializer])
    def list(self, request: Request) -> Response:
        return super().list(request)

    @extend_schema(responses={200: ApiKeyDetailSerializer})
    def retrieve(self, request: Request, api_key_id: str) -> Response:
        """The key and the applications brokers saw using it (client.id, client software, address, first and last seen)."""
        return Response(ApiKeyDetailSerializer(self.get_object()).data)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: NewApiKeySerializer})
    def create(self, request: Request) -> Response:
        payload = ApiKeyCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        values = payload.validated_data
        owner = check_create_key(self.actor, values["kind"], values.get("owner"), values["description"])
        created = do_create_key(self.actor, values["kind"], owner, values["description"], self.request_id)
        context = {"secret": created.secret, "job": job_summary(created.job, request)}
        return Response(NewApiKeySerializer(created.key, context=context).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: RevokedApiKeySerializer})
    def destroy(self, request: Request, api_key_id: str) -> Response:
        key, job = do_revoke_key(self.actor, self.get_object(), self.request_id)
        return Response(RevokedApiKeySerializer(key, context={"job": job_summary(job, request)}).data)
