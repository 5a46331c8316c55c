"""Qualified names: a tenant's topic or group as brokers store and log it, ``<tenant>~<name>``.

Clients always name topics and groups plainly; a broker maps each name into its tenant's
space on the way in and back out on the way out, so that two tenants may both own
``orders`` and no name a client can write reaches another tenant's data. ``~`` can never
appear in a Kafka topic name, so splitting at the first ``~`` is unambiguous. Names without
a tenant (standalone topics and the broker's internal topics) keep their plain form.
"""

from __future__ import annotations

# The rule itself lives in log_formats.topic_names, shared with the SDK, the control plane and the pipelines.
from log_formats.topic_names import TENANT_SEPARATOR, qualify
from log_formats.topic_names import split_qualified_name as split

__all__ = ["TENANT_SEPARATOR", "belongs_to", "plain", "qualify", "split"]


def belongs_to(qualified: str, tenant_id: str) -> bool:
    """True when ``qualified`` is a name of ``tenant_id`` (for no tenant: a name without one)."""
    if not tenant_id:
        return TENANT_SEPARATOR not in qualified
    return qualified.startswith(tenant_id + TENANT_SEPARATOR)


def plain(qualified: str) -> str:
    """The name a client of the owning tenant knows ``qualified`` by."""
    return split(qualified)[1]
