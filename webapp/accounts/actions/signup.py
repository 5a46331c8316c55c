"""Self-service sign-up: a user, a tenant, the user's owner membership and the tenant's quota."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.password_validation import get_password_validators, validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils.text import slugify

from webapp.accounts.errors import Conflict, InvalidInput
from webapp.accounts.models import Membership, Plan, Role, Tenant
from webapp.accounts.tenant_hooks import run_sign_up_hooks
from webapp.audit.facade import record_tenant_event

MAX_TENANT_NAME_LENGTH = 100
MAX_USERNAME_LENGTH = 150
# Used when settings.AUTH_PASSWORD_VALIDATORS is empty: a sign-up form open to the internet
# must refuse short, common, all-digit and username-like passwords whatever the settings say.
DEFAULT_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]


@dataclass(frozen=True)
class SignUp:
    user: AbstractBaseUser
    tenant: Tenant
    membership: Membership


def check_new_user(username: str, email: str, password: str) -> None:
    """Field errors for a new user: a free username, a valid e-mail, a password Django's
    validators accept."""
    errors: dict[str, object] = {}
    user_model = get_user_model()
    if not username or len(username) > MAX_USERNAME_LENGTH:
        errors["username"] = [f"1 to {MAX_USERNAME_LENGTH} characters."]
    else:
        try:
            user_model.username_validator(username)  # type: ignore[attr-defined]
        except ValidationError as error:
            errors["username"] = list(error.messages)
    try:
        validate_email(email)
    except ValidationError:
        errors["email"] = ["Enter a valid e-mail address."]
    try:
        validators = get_password_validators(settings.AUTH_PASSWORD_VALIDATORS or DEFAULT_PASSWORD_VALIDATORS)
        validate_password(password, user_model(username=username, email=email), password_validators=validators)
    except ValidationError as error:
        errors["password"] = list(error.messages)
    if errors:
        raise InvalidInput(errors)
    if user_model.objects.filter(username__iexact=username).exists():
        raise Conflict(f"The username '{username}' is taken.")


def check_sign_up(username: str, email: str, password: str, tenant_name: str) -> None:
    errors: dict[str, object] = {}
    if not tenant_name.strip() or len(tenant_name) > MAX_TENANT_NAME_LENGTH:
        errors["tenant_name"] = [f"1 to {MAX_TENANT_NAME_LENGTH} characters."]
    try:
        check_new_user(username, email, password)
    except InvalidInput as error:
        errors.update(error.errors)
    if errors:
        raise InvalidInput(errors)


def create_user(username: str, email: str, password: str) -> AbstractBaseUser:
    """Precondition: :func:`check_new_user` passed; raises Conflict if the name was taken since."""
    try:
        with transaction.atomic():
            return get_user_model().objects.create_user(username=username, email=email, password=password)
    except IntegrityError as error:
        raise Conflict(f"The username '{username}' is taken.") from error


def do_sign_up(username: str, email: str, password: str, tenant_name: str, plan: str = Plan.STANDARD) -> SignUp:
    """Create the user, the tenant (with a unique slug), the owner membership and the quota
    row, all or nothing. Precondition: :func:`check_sign_up` passed."""
    with transaction.atomic():
        user = create_user(username, email, password)
        tenant = Tenant(name=tenant_name.strip(), plan=plan)
        # The public id's random part makes the slug unique without a lookup loop.
        tenant.slug = f"{slugify(tenant_name)[:36] or 'tenant'}-{tenant.public_id.split('-', 1)[1]}"
        tenant.save()
        membership = Membership.objects.create(tenant=tenant, user=user, role=Role.OWNER)
        # Catalog's hook creates the quota row (webapp.catalog.limits.create_quota_row).
        run_sign_up_hooks(tenant)
        record_tenant_event(tenant, "tenant.create", tenant.public_id, {"name": tenant.name, "plan": plan}, principal=membership.principal, name=username)
    return SignUp(user=user, tenant=tenant, membership=membership)
