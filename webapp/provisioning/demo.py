"""The demo tenant of ``manage.py demo`` and ``make up``: everything a person needs to try Weir.

Created through the same actions as the API and the dashboard (so it also exercises
them): a tenant with an owner who signs in with a password and holds the cloud key (REST),
a service account ``demo-app`` with a cluster key (data plane), the topic ``demo`` and ACLs
that let the service account produce to and consume from topics and groups starting with
``demo``. The cloud key is the owner's, as in a managed service where the person who signs
up administers the tenant: every command of the README's REST tour (topics, jobs,
partitions, ACLs) works with it, while the application's identity stays least-privileged. Running it again reuses the tenant, the account and the topic; it resets the
owner's password and replaces the demo keys (the old ones are revoked), because secrets are
shown only once and the caller needs working ones.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils.text import slugify

from webapp.accounts.facade import (
    Actor,
    ApiKey,
    ApiKeyKind,
    Conflict,
    Membership,
    Role,
    ServiceAccount,
    check_create_key,
    check_service_account_fields,
    check_sign_up,
    do_create_key,
    do_create_service_account,
    do_revoke_key,
    do_sign_up,
)
from webapp.catalog.facade import Operation, PatternType, Permission, ResourceType, Topic, check_create_acl, check_create_topic, do_create_acl, do_create_topic
from webapp.fleet.facade import BrokerNode, kafka_bootstrap_servers, placement_candidates
from webapp.provisioning.models import JobState, ProvisioningJob

DEMO_SERVICE_ACCOUNT = "demo-app"
DEMO_TOPIC = "demo"
DEMO_TOPIC_PARTITIONS = 3
# Replicas of each demo partition when that many brokers are available (fewer otherwise), so
# that killing a broker under `make up` shows a failover rather than an outage.
DEMO_TOPIC_REPLICATION_FACTOR = 3
# Demo keys are recognised by this description when a later run replaces them.
DEMO_KEY_DESCRIPTION = "demo key (replaced by every run of manage.py demo)"
# What the demo service account may do: produce, consume and describe topics named demo*, read groups named demo*.
DEMO_ACLS = (
    (ResourceType.TOPIC, Operation.READ),
    (ResourceType.TOPIC, Operation.WRITE),
    (ResourceType.TOPIC, Operation.DESCRIBE),
    # `weir topics describe` shows configs too (Kafka's DescribeConfigs needs this operation).
    (ResourceType.TOPIC, Operation.DESCRIBE_CONFIGS),
    # `AdminClient.create_topics` / `weir topics create` for topics named demo* (forwarded by the
    # broker to the controller, landing in the catalog like a REST call), and their configs.
    (ResourceType.TOPIC, Operation.CREATE),
    (ResourceType.TOPIC, Operation.ALTER_CONFIGS),
    (ResourceType.GROUP, Operation.READ),
)
# Polling interval while waiting for the demo's provisioning jobs.
JOB_POLL_SECONDS = 0.2


class DemoError(Exception):
    """The demo could not be set up as asked (for example, its jobs failed). Not retriable as is."""

    retriable = False


@dataclass(frozen=True)
class DemoCredentials:
    """What ``demo --json`` prints, one field per key."""

    username: str
    password: str
    tenant: str
    api_url: str
    schema_registry_url: str  # Confluent Schema Registry's API for the tenant (webapp/urls.py: /schema-registry/)
    dashboard_url: str
    bootstrap_servers: str
    kafka_bootstrap_servers: str  # the brokers' Kafka-protocol listeners, for stock Kafka clients ("" when none has one)
    cloud_api_key: str
    cloud_api_secret: str
    cluster_api_key: str
    cluster_api_secret: str
    service_account: str


@dataclass(frozen=True)
class DemoSetup:
    credentials: DemoCredentials
    tenant_name: str
    job_ids: list[int]


def _owner_actor(tenant_name: str, username: str, password: str) -> Actor:
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    if user is None:
        check_sign_up(username, f"{username}@example.com", password, tenant_name)
        signed_up = do_sign_up(username, f"{username}@example.com", password, tenant_name)
        return Actor(tenant=signed_up.tenant, role=signed_up.membership.role, membership=signed_up.membership)
    # Reset on every run: the password is printed, and printing one that no longer works
    # (or keeping a printed one in a file) would be worse than a new one.
    user.set_password(password)
    user.save(update_fields=["password"])
    membership = Membership.objects.select_related("tenant", "user").filter(user=user, role=Role.OWNER).order_by("created_at").first()
    if membership is None:
        raise DemoError(f"user {username!r} exists but owns no tenant; choose another --tenant name")
    return Actor(tenant=membership.tenant, role=membership.role, membership=membership)


def _service_account(actor: Actor) -> ServiceAccount:
    account = ServiceAccount.objects.filter(tenant=actor.tenant, name=DEMO_SERVICE_ACCOUNT).first()
    if account is not None:
        return account
    description = "The demo application's identity"
    check_service_account_fields(actor, DEMO_SERVICE_ACCOUNT, description, Role.DEVELOPER)
    return do_create_service_account(actor, DEMO_SERVICE_ACCOUNT, description, Role.DEVELOPER)


def _replace_keys(actor: Actor, account: ServiceAccount) -> tuple[dict[str, tuple[str, str]], list[int]]:
    """New demo keys (old ones revoked): the cloud key the owner's, the cluster key the service account's."""
    assert actor.membership is not None, "the demo's actor is its owner's membership"
    job_ids: list[int] = []
    demo_keys = ApiKey.objects.filter(tenant=actor.tenant, description=DEMO_KEY_DESCRIPTION, revoked_at__isnull=True)
    old_keys = demo_keys.filter(owner_service_account=account) | demo_keys.filter(owner_membership=actor.membership)
    for key in old_keys:
        _, job = do_revoke_key(actor, key)
        if job is not None:
            job_ids.append(job.pk)
    owners = {ApiKeyKind.CLOUD: actor.membership.public_id, ApiKeyKind.CLUSTER: account.public_id}
    pairs: dict[str, tuple[str, str]] = {}
    for kind in (ApiKeyKind.CLOUD, ApiKeyKind.CLUSTER):
        owner = check_create_key(actor, kind, owners[kind], DEMO_KEY_DESCRIPTION)
        created = do_create_key(actor, kind, owner, DEMO_KEY_DESCRIPTION)
        pairs[kind] = (created.key.key_id, created.secret)
        if created.job is not None:
            job_ids.append(created.job.pk)
    return pairs, job_ids


def demo_replication_factor() -> int:
    """DEMO_TOPIC_REPLICATION_FACTOR, or the number of brokers placement may use when smaller (at least 1)."""
    return max(1, min(DEMO_TOPIC_REPLICATION_FACTOR, len(placement_candidates())))


def _topic_and_acls(actor: Actor, account: ServiceAccount) -> list[int]:
    job_ids: list[int] = []
    if not Topic.objects.filter(tenant=actor.tenant, name=DEMO_TOPIC).exists():
        new_topic = check_create_topic(actor, DEMO_TOPIC, DEMO_TOPIC_PARTITIONS, demo_replication_factor(), {})
        job_ids.append(do_create_topic(actor, new_topic).job.pk)
    for resource_type, operation in DEMO_ACLS:
        binding = check_create_acl(
            actor,
            resource_type=resource_type,
            resource_name=DEMO_TOPIC,
            pattern_type=PatternType.PREFIXED,
            principal=account.principal,
            host="*",
            operation=operation,
            permission=Permission.ALLOW,
        )
        try:
            _, job = do_create_acl(actor, binding)
        except Conflict:
            continue
        job_ids.append(job.pk)
    return job_ids


def bootstrap_servers() -> str:
    """The registered brokers' addresses, or the configured bootstrap list when none is registered."""
    addresses = [node.address for node in BrokerNode.objects.order_by("node_id")]
    return ",".join(addresses) or settings.WEIR_BOOTSTRAP_SERVERS


def set_up_demo(tenant_name: str = "demo") -> DemoSetup:
    """Create or reuse the demo tenant named ``tenant_name`` (see the module docstring).

    Its owner's username is the slug of the name. Returns the credentials and the ids of
    the provisioning jobs this run recorded (wait for them with ``wait_for_jobs``).
    """
    username = slugify(tenant_name) or "demo"
    password = secrets.token_urlsafe(12)
    actor = _owner_actor(tenant_name, username, password)
    account = _service_account(actor)
    keys, key_jobs = _replace_keys(actor, account)
    catalog_jobs = _topic_and_acls(actor, account)
    public_url = settings.WEIR_PUBLIC_API_URL
    credentials = DemoCredentials(
        username=username,
        password=password,
        tenant=actor.tenant.public_id,
        api_url=f"{public_url}/api/v1",
        schema_registry_url=f"{public_url}/schema-registry",
        dashboard_url=f"{public_url}/",
        bootstrap_servers=bootstrap_servers(),
        kafka_bootstrap_servers=kafka_bootstrap_servers(),
        cloud_api_key=keys[ApiKeyKind.CLOUD][0],
        cloud_api_secret=keys[ApiKeyKind.CLOUD][1],
        cluster_api_key=keys[ApiKeyKind.CLUSTER][0],
        cluster_api_secret=keys[ApiKeyKind.CLUSTER][1],
        service_account=account.public_id,
    )
    return DemoSetup(credentials=credentials, tenant_name=actor.tenant.name, job_ids=key_jobs + catalog_jobs)


def wait_for_jobs(job_ids: list[int], timeout_seconds: float) -> list[ProvisioningJob]:
    """Poll until every job has finished or ``timeout_seconds`` passed; the jobs as they are then."""
    deadline = time.monotonic() + timeout_seconds
    finished = (JobState.SUCCEEDED, JobState.FAILED)
    while True:
        jobs = list(ProvisioningJob.objects.filter(pk__in=job_ids).order_by("created_at"))
        if all(job.state in finished for job in jobs) or time.monotonic() >= deadline:
            return jobs
        time.sleep(JOB_POLL_SECONDS)
