"""Kafka's AclBindingFilter over the catalog: which bindings a list or delete request means.

Every field left out (None) or given as ``ANY`` matches anything. ``pattern_type`` also takes
``MATCH``: with a resource name, it selects the bindings that would apply to that name (the
LITERAL binding of the name, the LITERAL wildcard ``*``, and every PREFIXED binding whose
name is a prefix of it), as Kafka's ``PatternType.MATCH`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from webapp.catalog.models import AclBinding, PatternType

ANY = "ANY"
MATCH = "MATCH"
WILDCARD_RESOURCE = "*"


@dataclass(frozen=True)
class AclFilter:
    resource_type: str | None = None
    resource_name: str | None = None
    pattern_type: str | None = None  # LITERAL, PREFIXED, ANY or MATCH
    principal: str | None = None
    host: str | None = None
    operation: str | None = None
    permission: str | None = None


def _given(value: str | None) -> bool:
    return value is not None and value != ANY


def apply_acl_filter(bindings: QuerySet[AclBinding], acl_filter: AclFilter) -> QuerySet[AclBinding]:
    """``bindings`` narrowed to those ``acl_filter`` matches (one query, no loop over rows)."""
    exact = {
        field: getattr(acl_filter, field) for field in ("resource_type", "principal", "host", "operation", "permission") if _given(getattr(acl_filter, field))
    }
    bindings = bindings.filter(**exact)
    name = acl_filter.resource_name
    pattern = acl_filter.pattern_type
    if pattern == MATCH:
        if name is not None:
            prefixes = [name[:length] for length in range(1, len(name) + 1)]
            bindings = bindings.filter(
                Q(pattern_type=PatternType.LITERAL, resource_name__in=[name, WILDCARD_RESOURCE])
                | Q(pattern_type=PatternType.PREFIXED, resource_name__in=prefixes)
            )
        return bindings
    if _given(pattern):
        bindings = bindings.filter(pattern_type=pattern)
    if name is not None:
        bindings = bindings.filter(resource_name=name)
    return bindings
