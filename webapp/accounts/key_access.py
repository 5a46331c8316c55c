"""What an API key acts with: the one rule that the brokers' security snapshot, the REST API and
the dashboard all read, so that what users are shown is what the brokers decide.

- A cluster key of a member with the admin or owner role is its tenant's cluster administrator
  (``roles.acts_as_cluster_admin``): the brokers consult no ACL for it, as Confluent Cloud's user
  keys with the CloudClusterAdmin role and Kafka's super.users.
- Every other cluster key (a developer's or viewer's, and every service account's whatever its
  role) gets what the ACL bindings naming its principal grant.
- A cloud key calls the REST API, which authorizes it with its owner's role; ACLs play no part.

The answer follows the owner's current role: a role change across the admin line changes it for
every key of that member at once (and records SYNC_SECURITY, ``actions.members.do_change_role``).
"""

from __future__ import annotations

from django.db import models

from webapp.accounts.models import ApiKey, ApiKeyKind
from webapp.accounts.roles import acts_as_cluster_admin


class KeyAccess(models.TextChoices):
    CLUSTER_ADMIN = "cluster_admin", "Cluster administrator"
    ACLS = "acls", "Access by ACLs"
    ROLE = "role", "Owner's role (REST API)"


def owner_role(key: ApiKey) -> str:
    """The role of the key's owner (member or service account). Precondition: the owner is
    loaded or loadable (one query when not selected with the key)."""
    owner = key.owner_membership or key.owner_service_account
    assert owner is not None, "a key has exactly one owner (api_key_has_exactly_one_owner)"
    return owner.role


def key_is_cluster_admin(key: ApiKey) -> bool:
    """Whether the brokers let ``key`` do everything on its tenant's names without ACLs."""
    return key.kind == ApiKeyKind.CLUSTER and key.owner_membership is not None and acts_as_cluster_admin(key.owner_membership.role)


def key_access(key: ApiKey) -> KeyAccess:
    """What ``key`` acts with (see the module docstring)."""
    if key.kind == ApiKeyKind.CLOUD:
        return KeyAccess.ROLE
    return KeyAccess.CLUSTER_ADMIN if key_is_cluster_admin(key) else KeyAccess.ACLS
