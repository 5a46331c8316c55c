"""The brokers page: each broker's state, when it was last heard from, and how many of the
tenant's partitions it leads and hosts, for every member and for operators.

Brokers are shared by all tenants; a member sees counts of its own tenant's partitions only
(never another tenant's topics), an operator signed in outside any tenant counts every
partition. The table is also served alone (``broker_table``) for the page's script to
refresh every few seconds; both read only the database.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache

from webapp.catalog.facade import BrokerPartitionCounts, broker_partition_counts
from webapp.dashboard.fragments import fragment_of
from webapp.dashboard.tenancy import member_or_operator_page, page_context
from webapp.fleet.facade import BrokerNode, brokers


@dataclass(frozen=True)
class BrokerRow:
    broker: BrokerNode
    partitions: BrokerPartitionCounts


def broker_rows(request: HttpRequest) -> list[BrokerRow]:
    """Every broker with its counts over the current tenant's partitions (all for an
    operator outside any tenant): two queries."""
    actor = request.actor  # type: ignore[attr-defined]
    counts = broker_partition_counts(actor.tenant if actor is not None else None)
    return [BrokerRow(broker, counts.get(broker.node_id, BrokerPartitionCounts())) for broker in brokers()]


def _broker_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/brokers.html", page_context(request, "brokers", rows=broker_rows(request)))


def _broker_table(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/brokers_table.html", {"actor": request.actor, "rows": broker_rows(request)})  # type: ignore[attr-defined]


broker_list = member_or_operator_page(_broker_list)
# A browser opening the table as a page is sent to the Brokers page.
broker_table = never_cache(fragment_of(lambda: f"{reverse('dashboard:brokers')}#brokers")(member_or_operator_page(_broker_table)))
