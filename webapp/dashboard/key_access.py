"""The words the API-key pages use for what a key acts with (``webapp.accounts.key_access``, the
rule the brokers' security snapshot follows): the short one in the key lists, the longer one on
a key's page, which also says why a key is left to ACLs.
"""

from __future__ import annotations

from webapp.accounts.facade import ApiKey, KeyAccess, key_access, owner_role


def key_access_summary(key: ApiKey) -> str:
    """One phrase for the key lists. Precondition: the key's owner is loaded (no query then)."""
    access = key_access(key)
    if access == KeyAccess.CLUSTER_ADMIN:
        return f"Cluster administrator: acts with its owner's role ({owner_role(key)}); no ACLs needed"
    if access == KeyAccess.ACLS:
        return "Access by ACLs"
    return f"REST API: acts with its owner's role ({owner_role(key)})"


def key_access_explanation(key: ApiKey) -> str:
    """The summary and, for a key left to ACLs, why its owner's role does not make it the cluster
    administrator."""
    summary = key_access_summary(key)
    if key_access(key) != KeyAccess.ACLS:
        return summary + "."
    if key.owner_service_account is not None:
        why = "a service account's cluster keys act by ACLs whatever its role"
    else:
        why = f"only admins' and owners' cluster keys act as the cluster administrator; its owner is a {owner_role(key)}"
    return f"{summary}: the bindings naming {key.principal} decide what it may do ({why})."
