"""``/tenant`` (the caller's tenant), ``/members``, ``/invitations``, ``/quotas``, ``/sign-up``."""

from __future__ import annotations

from django.contrib.auth import login
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status
from rest_framework.parsers import JSONParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from webapp.accounts.facade import (
    Actor,
    InvalidInput,
    Invitation,
    Membership,
    Role,
    check_accept_invitation,
    check_change_role,
    check_invite,
    check_new_user,
    check_sign_up,
    check_update_tenant,
    create_user,
    do_accept_invitation,
    do_change_role,
    do_invite,
    do_remove_member,
    do_sign_up,
    do_update_tenant,
)
from webapp.api.permissions import HasRequiredRole, IsTenantMember
from webapp.api.serializers.accounts import (
    InvitationAcceptSerializer,
    InvitationCreateSerializer,
    InvitationSerializer,
    MemberRoleChangeSerializer,
    MemberSerializer,
    MemberUpdateSerializer,
    NewInvitationSerializer,
    QuotaSerializer,
    QuotaUpdateSerializer,
    SignUpResultSerializer,
    SignUpSerializer,
    TenantSerializer,
    TenantUpdateSerializer,
)
from webapp.api.serializers.common import JobResponseSerializer, job_summary
from webapp.api.views.base import BaseApiView, TenantScopedViewSet
from webapp.catalog.facade import check_set_quota, do_set_quota, tenant_quota


class TenantRoleView(BaseApiView):
    """A singleton resource of the caller's tenant; reads need viewer, writes ``write_role``."""

    permission_classes = [IsTenantMember, HasRequiredRole]
    write_role = Role.OWNER

    @property
    def actor(self) -> Actor:
        user = self.request.user
        assert isinstance(user, Actor)
        return user

    def required_role(self, request: Request) -> str:
        return Role.VIEWER if request.method in ("GET", "HEAD", "OPTIONS") else self.write_role


class TenantView(TenantRoleView):
    """The caller's tenant: GET for every member, PATCH (name, plan) for owners."""

    @extend_schema(responses={200: TenantSerializer})
    def get(self, request: Request) -> Response:
        return Response(TenantSerializer(self.actor.tenant, context={"role": self.actor.role}).data)

    @extend_schema(request=TenantUpdateSerializer, responses={200: TenantSerializer})
    def patch(self, request: Request) -> Response:
        payload = TenantUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        name, plan = payload.validated_data.get("name"), payload.validated_data.get("plan")
        check_update_tenant(self.actor, name, plan)
        tenant, _ = do_update_tenant(self.actor, name, plan, self.request_id)
        return Response(TenantSerializer(tenant, context={"role": self.actor.role}).data)


class QuotaView(TenantRoleView):
    """The tenant's byte-rate quotas: GET for every member, PUT for admins (null = plan default)."""

    write_role = Role.ADMIN

    @extend_schema(responses={200: QuotaSerializer})
    def get(self, request: Request) -> Response:
        return Response(QuotaSerializer(tenant_quota(self.actor)).data)

    @extend_schema(request=QuotaUpdateSerializer, responses={200: QuotaSerializer})
    def put(self, request: Request) -> Response:
        payload = QuotaUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        produce = payload.validated_data["produce_bytes_per_second"]
        consume = payload.validated_data["consume_bytes_per_second"]
        check_set_quota(self.actor, produce, consume)
        quota, job = do_set_quota(self.actor, produce, consume, self.request_id)
        return Response({**QuotaSerializer(quota).data, "job": job_summary(job, request)})


class MemberViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TenantScopedViewSet):
    """Members: every member lists them; owners change roles and remove members."""

    queryset = Membership.objects.all()
    serializer_class = MemberSerializer
    lookup_field = "public_id"
    lookup_url_kwarg = "member_id"
    write_role = Role.OWNER

    def safely_get_queryset(self, queryset: QuerySet[Membership]) -> QuerySet[Membership]:
        return queryset.select_related("user")

    @extend_schema(request=MemberUpdateSerializer, responses={200: MemberRoleChangeSerializer})
    def partial_update(self, request: Request, member_id: str) -> Response:
        """Change the member's role. Its cluster keys act with it: across the admin line they become,
        or stop being, the tenant's cluster administrator, and ``job`` tells the brokers."""
        membership = self.get_object()
        payload = MemberUpdateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        check_change_role(self.actor, membership, payload.validated_data["role"])
        updated, job = do_change_role(self.actor, membership, payload.validated_data["role"], self.request_id)
        return Response(MemberRoleChangeSerializer(updated, context={"job": job_summary(job, request)}).data)

    @extend_schema(responses={200: JobResponseSerializer})
    def destroy(self, request: Request, member_id: str) -> Response:
        job = do_remove_member(self.actor, self.get_object(), self.request_id)
        return Response({"job": job_summary(job, request)})


class InvitationViewSet(mixins.ListModelMixin, TenantScopedViewSet):
    """Pending invitations (admins); creating one returns its token once."""

    queryset = Invitation.objects.all()
    serializer_class = InvitationSerializer
    read_role = Role.ADMIN
    write_role = Role.ADMIN

    def safely_get_queryset(self, queryset: QuerySet[Invitation]) -> QuerySet[Invitation]:
        return queryset.filter(accepted_at__isnull=True)

    @extend_schema(request=InvitationCreateSerializer, responses={201: NewInvitationSerializer})
    def create(self, request: Request) -> Response:
        payload = InvitationCreateSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        check_invite(self.actor, payload.validated_data["email"], payload.validated_data["role"])
        created = do_invite(self.actor, payload.validated_data["email"], payload.validated_data["role"])
        return Response(NewInvitationSerializer(created.invitation, context={"token": created.token}).data, status=status.HTTP_201_CREATED)


class InvitationAcceptView(BaseApiView):
    """Accept an invitation: as the signed-in user, or (anonymous) as a new user created
    with ``username`` and ``password``; the e-mail is the invitation's. JSON bodies only, as
    for :class:`SignUpView` (no cross-site form post can create a user here)."""

    permission_classes = [AllowAny]
    parser_classes = [JSONParser]

    @extend_schema(
        request=InvitationAcceptSerializer,
        responses={201: MemberSerializer, 404: OpenApiResponse(description="No such invitation, or it was used or has expired.")},
    )
    def post(self, request: Request) -> Response:
        payload = InvitationAcceptSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        invitation = check_accept_invitation(payload.validated_data["token"])
        user = request.user.user if isinstance(request.user, Actor) else request.user
        if user is None or not user.is_authenticated:
            username, password = payload.validated_data.get("username"), payload.validated_data.get("password")
            if not username or not password:
                raise InvalidInput({"username": ["Sign in, or give a username and password to create a user."]})
            check_new_user(username, invitation.email, password)
            user = create_user(username, invitation.email, password)
        membership = do_accept_invitation(invitation, user)
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)


class SignUpView(BaseApiView):
    """Self-service sign-up: a new user owning a new tenant; the browser is signed in.

    JSON bodies only: a page on another site can make a browser post a form here (no CSRF
    token is asked of an anonymous caller), which would sign the visitor in as the attacker's
    new user (login CSRF). A cross-site JSON post needs a CORS preflight, which this site never
    grants, so refusing every other media type (415) closes that door; API clients send JSON.
    """

    permission_classes = [AllowAny]
    authentication_classes: list[type] = []
    parser_classes = [JSONParser]

    @extend_schema(request=SignUpSerializer, responses={201: SignUpResultSerializer})
    def post(self, request: Request) -> Response:
        payload = SignUpSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        values = payload.validated_data
        check_sign_up(values["username"], values["email"], values["password"], values["tenant_name"])
        result = do_sign_up(values["username"], values["email"], values["password"], values["tenant_name"])
        login(request._request, result.user, backend="django.contrib.auth.backends.ModelBackend")
        tenant = TenantSerializer(result.tenant, context={"role": result.membership.role}).data
        return Response({"username": result.user.get_username(), "tenant": tenant, "member_id": result.membership.public_id}, status=status.HTTP_201_CREATED)
