"""Qualified names: a tenant's topic or group as brokers store and log it, ``<tenant>~<name>``.

Clients always name topics and groups plainly; a broker maps each name into its tenant's
space on the way in and back out on the way out, so that two tenants may both own
``orders`` and no name a client can write reaches another tenant's data. ``~`` can never
appear in a Kafka topic name, so splitting at the first ``~`` is unambiguous. Names without
a tenant (standalone topics and the broker's internal topics) keep their plain form.
"""

from __future__ import annotations

from weir.topic_names import TENANT_SEPARATOR  # never legal in a Kafka topic name, so the split is unambiguous


def qualify(tenant_id: str, name: str) -> str:
    """``tn-…~orders`` for a tenant's ``orders``; ``orders`` unchanged when there is no tenant."""
    if not tenant_id:
        return name
    return f"{tenant_id}{TENANT_SEPARATOR}{name}"


def split(qualified: str) -> tuple[str, str]:
    """(tenant id, plain name); the tenant id is empty for a name without one."""
    tenant_id, separator, name = qualified.partition(TENANT_SEPARATOR)
    if not separator:
        return "", qualified
    return tenant_id, name


def belongs_to(qualified: str, tenant_id: str) -> bool:
    """True when ``qualified`` is a name of ``tenant_id`` (for no tenant: a name without one)."""
    if not tenant_id:
        return TENANT_SEPARATOR not in qualified
    return qualified.startswith(tenant_id + TENANT_SEPARATOR)


def plain(qualified: str) -> str:
    """The name a client of the owning tenant knows ``qualified`` by."""
    return split(qualified)[1]
