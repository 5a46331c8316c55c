"""Accounts: tenants with a plan, memberships with roles, service accounts, API keys.

Mutations go through ``webapp.accounts.actions``; views, serializers and tasks never save
these models directly.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db import models
from django.db.models import Q

from webapp.public_ids import new_member_id, new_service_account_id, new_tenant_id


class Plan(models.TextChoices):
    FREE = "free", "Free"
    STANDARD = "standard", "Standard"
    ENTERPRISE = "enterprise", "Enterprise"


@dataclass(frozen=True)
class PlanLimits:
    """What a plan allows a tenant; quotas are per tenant, summed over its topics."""

    max_topics: int
    max_partitions: int  # summed over every topic of the tenant
    max_partitions_per_topic: int
    produce_bytes_per_second: int  # default produce quota
    consume_bytes_per_second: int  # default fetch quota


PLAN_LIMITS: dict[str, PlanLimits] = {
    Plan.FREE: PlanLimits(max_topics=10, max_partitions=30, max_partitions_per_topic=6, produce_bytes_per_second=1 << 20, consume_bytes_per_second=2 << 20),
    Plan.STANDARD: PlanLimits(
        max_topics=500, max_partitions=1500, max_partitions_per_topic=100, produce_bytes_per_second=50 << 20, consume_bytes_per_second=150 << 20
    ),
    Plan.ENTERPRISE: PlanLimits(
        max_topics=5000, max_partitions=20000, max_partitions_per_topic=1000, produce_bytes_per_second=500 << 20, consume_bytes_per_second=1500 << 20
    ),
}


class Tenant(models.Model):
    """An organisation. Everything a customer owns hangs off exactly one tenant."""

    public_id = models.CharField(max_length=32, unique=True, default=new_tenant_id, editable=False)
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=50, unique=True)
    plan = models.CharField(max_length=20, choices=Plan.choices, default=Plan.STANDARD)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    @property
    def limits(self) -> PlanLimits:
        return PLAN_LIMITS[self.plan]


class Role(models.TextChoices):
    """What a member may do, from most to least: see ``webapp.accounts.roles``."""

    OWNER = "owner", "Owner"
    ADMIN = "admin", "Admin"
    DEVELOPER = "developer", "Developer"
    VIEWER = "viewer", "Viewer"


class Membership(models.Model):
    """A user's place in a tenant. ``public_id`` (``u-...``) is the user's id inside the
    tenant: the principal of keys the user owns is ``User:<public_id>``."""

    public_id = models.CharField(max_length=32, unique=True, default=new_member_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "user"], name="one_membership_per_user_and_tenant")]
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.user} in {self.tenant.slug} as {self.role}"

    @property
    def principal(self) -> str:
        return f"User:{self.public_id}"


class Invitation(models.Model):
    """An owner's or admin's invitation of an e-mail address to a tenant with a role.

    The token is shown once (in the invitation link) and stored as its SHA-256.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=20, choices=Role.choices)
    token_sha256 = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)


class ServiceAccount(models.Model):
    """An application's identity; its principal is ``User:<public_id>`` (``sa-...``)."""

    public_id = models.CharField(max_length=32, unique=True, default=new_service_account_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="service_accounts")
    name = models.CharField(max_length=64)
    description = models.CharField(max_length=256, blank=True)
    # The role its cloud (REST) keys act with; data-plane access is decided by ACLs alone.
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.DEVELOPER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="service_account_name_unique_per_tenant")]
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    @property
    def principal(self) -> str:
        return f"User:{self.public_id}"


class ApiKeyKind(models.TextChoices):
    """As in Confluent Cloud: cloud keys call the REST API, cluster keys the gRPC data plane."""

    CLOUD = "cloud", "Cloud (REST API)"
    CLUSTER = "cluster", "Cluster (data plane)"


class ApiKey(models.Model):
    """A key id (public) and a secret shown once and stored only as its SHA-256.

    Secrets are 256-bit random tokens with a recognizable prefix (``weir_cloud_`` /
    ``weir_cluster_``) so leak scanners can spot them; a fast hash is enough for such
    secrets, and brokers verify cluster keys with the same hash. Owned by exactly one of a
    service account or a member.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    kind = models.CharField(max_length=10, choices=ApiKeyKind.choices)
    key_id = models.CharField(max_length=32, unique=True)
    secret_sha256 = models.CharField(max_length=64)
    owner_service_account = models.ForeignKey(ServiceAccount, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys")
    owner_membership = models.ForeignKey(Membership, on_delete=models.CASCADE, null=True, blank=True, related_name="api_keys")
    description = models.CharField(max_length=256, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(owner_service_account__isnull=False) & Q(owner_membership__isnull=True))
                | (Q(owner_service_account__isnull=True) & Q(owner_membership__isnull=False)),
                name="api_key_has_exactly_one_owner",
            )
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} key {self.key_id}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def principal(self) -> str:
        owner = self.owner_service_account or self.owner_membership
        assert owner is not None
        return owner.principal


# Distinct applications kept per cluster key (brokers keep as many; the oldest seen go first).
MAX_KEY_APPLICATIONS = 20
# Longest client-supplied value kept (brokers cut at 128 characters already; never trusted).
KEY_APPLICATION_FIELD_CHARS = 128


class ApiKeyApplication(models.Model):
    """An application brokers saw using a cluster key: what it says it is (Kafka client.id,
    KIP-511 client software name/version, all client-supplied) and the address it came from,
    with when any broker first and last saw it. At most ``MAX_KEY_APPLICATIONS`` per key, the
    most recently seen (``webapp.accounts.actions.key_use``); shown before the key is revoked.
    """

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="applications")
    client_id = models.CharField(max_length=KEY_APPLICATION_FIELD_CHARS, blank=True)
    software_name = models.CharField(max_length=KEY_APPLICATION_FIELD_CHARS, blank=True)
    software_version = models.CharField(max_length=KEY_APPLICATION_FIELD_CHARS, blank=True)
    address = models.CharField(max_length=64, blank=True)
    first_seen_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["api_key", "client_id", "software_name", "software_version", "address"], name="api_key_application_unique")
        ]
        ordering = ["-last_seen_at"]

    def __str__(self) -> str:
        return f"{self.client_id or '(no client.id)'} from {self.address} with {self.api_key.key_id}"

    @property
    def software(self) -> str:
        """``name version`` as the client declared it ("" when it declared none)."""
        return f"{self.software_name} {self.software_version}".strip()


class ScramMechanism(models.TextChoices):
    SCRAM_SHA_256 = "SCRAM-SHA-256", "SCRAM-SHA-256"
    SCRAM_SHA_512 = "SCRAM-SHA-512", "SCRAM-SHA-512"


class ScramCredential(models.Model):
    """A cluster key's SASL/SCRAM credential for one mechanism (RFC 5802): salt, iterations,
    StoredKey and ServerKey, base64 text; never the salted password (``webapp.accounts.scram``).

    Derived when the key is created, the only moment the secret is known: keys created before
    SCRAM support have none and authenticate with PLAIN only.
    """

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="scram_credentials")
    mechanism = models.CharField(max_length=16, choices=ScramMechanism.choices)
    salt = models.CharField(max_length=100)  # base64
    iterations = models.PositiveIntegerField()
    stored_key = models.CharField(max_length=100)  # base64 of H(ClientKey)
    server_key = models.CharField(max_length=100)  # base64 of HMAC(SaltedPassword, "Server Key")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["api_key", "mechanism"], name="scram_credential_one_per_mechanism")]

    def __str__(self) -> str:
        return f"{self.mechanism} credential of {self.api_key_id}"


# Longest SCRAM user name a tenant may choose (Kafka sets none; this keeps login names and principals short).
MAX_SCRAM_USER_NAME_CHARS = 128


class ScramUserCredential(models.Model):
    """A tenant's SCRAM user's credential for one mechanism: what Kafka's AlterUserScramCredentials
    upserts (``webapp.accounts.actions.scram_users``). A SCRAM user is its name in its tenant, with
    one row per mechanism; it exists while it has a row. Kafka clients log in as
    ``<user_name>@<tenant public id>`` and act as principal ``User:<user_name>`` in the tenant.
    Salt, iterations, StoredKey and ServerKey only (base64 text), never the password nor the salted one.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="scram_user_credentials")
    user_name = models.CharField(max_length=MAX_SCRAM_USER_NAME_CHARS)
    mechanism = models.CharField(max_length=16, choices=ScramMechanism.choices)
    salt = models.CharField(max_length=200)  # base64
    iterations = models.PositiveIntegerField()
    stored_key = models.CharField(max_length=100)  # base64 of H(ClientKey)
    server_key = models.CharField(max_length=100)  # base64 of HMAC(SaltedPassword, "Server Key")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "user_name", "mechanism"], name="scram_user_credential_one_per_mechanism")]
        ordering = ["user_name", "mechanism"]

    def __str__(self) -> str:
        return f"{self.mechanism} credential of SCRAM user {self.user_name}"
