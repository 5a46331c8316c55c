"""Live throughput: rates from two readings of the brokers' running traffic totals (pure), and
against one real broker the topic page's part and its refresh fragment (one test: the only
thing here that starts a process)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from tests.webapp.dashboard.conftest import Member
from tests.webapp.group_broker import control_plane_broker, provision_topic
from webapp.dashboard.throughput import Rates, Reading, ThroughputHistory, rate_series, rates_between, summed
from weir import Consumer, Producer, TopicPartition
from weir.consumer import consume_available

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def reading(seconds: float, records_in: int, bytes_in: int = 0, *, by: str = "broker-a", records_out: int = 0, bytes_out: int = 0) -> Reading:
    return Reading(T0 + timedelta(seconds=seconds), by, bytes_in, records_in, bytes_out, records_out)


def test_two_readings_of_one_broker_process_give_per_second_rates() -> None:
    rates = rates_between(reading(0, 100, 1000, records_out=10), reading(4, 300, 9000, records_out=50, bytes_out=400))
    assert rates == Rates(T0 + timedelta(seconds=4), records_in=50.0, records_out=10.0, bytes_in=2000.0, bytes_out=100.0)


def test_a_restarted_broker_or_totals_going_back_give_no_rate() -> None:
    assert rates_between(reading(0, 100), reading(5, 200, by="broker-b")) is None
    assert rates_between(reading(0, 100), reading(5, 50)) is None
    assert rates_between(reading(5, 100), reading(5, 100)) is None
    series = rate_series([reading(0, 0), reading(2, 20), reading(4, 5, by="new"), reading(6, 25, by="new")])
    assert [(r.at, r.records_in) for r in series] == [(T0 + timedelta(seconds=2), 10.0), (T0 + timedelta(seconds=6), 10.0)]


def test_partitions_add_up_per_moment() -> None:
    one = rate_series([reading(0, 0), reading(2, 20)])
    two = rate_series([reading(0, 0), reading(2, 4), reading(4, 8)])
    assert [(r.at.second, r.records_in) for r in summed([one, two])] == [(2, 12.0), (4, 2.0)]


def test_history_keeps_readings_apart_and_recent() -> None:
    history = ThroughputHistory(keep=timedelta(seconds=60), min_interval=timedelta(seconds=2), prefix="test:throughput:apart")
    history.clear()
    for seconds in (0, 1, 3, 70):
        history.record("p0", reading(seconds, seconds))
    # 1 s after the first is too close; 0 and 3 are more than 60 s before 70.
    assert [r.records_in for r in history.readings("p0", T0 + timedelta(seconds=70))] == [70]
    history.clear()
    assert history.readings("p0", T0 + timedelta(seconds=71)) == []


def test_history_is_shared_by_every_web_process_through_the_cache_and_bounded() -> None:
    # Two histories on one cache stand for two gunicorn workers: a reading one keeps, the other sees.
    worker_one = ThroughputHistory(keep=timedelta(seconds=60), min_interval=timedelta(seconds=2), prefix="test:throughput:shared")
    worker_two = ThroughputHistory(keep=timedelta(seconds=60), min_interval=timedelta(seconds=2), prefix="test:throughput:shared")
    worker_one.clear()
    worker_one.record(("partition", "t", 0, 1), reading(0, 0))
    kept = worker_two.record_many([(("partition", "t", 0, 1), reading(4, 8)), (("partition", "t", 1, 1), None)], T0 + timedelta(seconds=4))
    assert [[r.records_in for r in one] for one in kept] == [[0, 8], []]
    assert [r.records_in for r in worker_one.readings(("partition", "t", 0, 1), T0 + timedelta(seconds=4))] == [0, 8]
    for seconds in range(6, 400, 2):  # at most keep / min_interval + 1 readings per partition
        worker_two.record(("partition", "t", 0, 1), reading(seconds, seconds))
    assert len(worker_one.readings(("partition", "t", 0, 1), T0 + timedelta(seconds=398))) == 31


@pytest.mark.django_db
def test_the_topic_page_shows_live_rates_from_the_brokers_counters(make_tenant: Callable[[str], Member], settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from webapp.dashboard import throughput_panels
    from webapp.provisioning.facade import describe_partitions, describe_tenant_traffic

    acme = make_tenant("acme")
    with control_plane_broker(tmp_path / "broker", settings, configs={"security.required": "true"}):
        provision_topic(acme.actor, "orders", partitions=2)
        from webapp.catalog.facade import Topic

        topic = Topic.objects.get(tenant=acme.tenant, name="orders")
        config = cluster_key_config(acme, settings.WEIR_BOOTSTRAP_SERVERS)
        throughput_panels.HISTORY.clear()

        first = describe_partitions(topic)
        assert [p.records_in_total for p in first] == [0, 0] and first[0].counted_by
        # The page's first view: one reading, no rate yet.
        page = acme.client.get(reverse("dashboard:topic", args=["orders"])).content.decode()
        assert 'id="throughput-measuring"' in page and 'data-live-url="/topics/orders/throughput/"' in page

        failures: list[object] = []
        producer = Producer({**config, "linger.ms": 0})
        try:
            for _ in range(30):
                producer.produce("orders", value=b"x" * 100, partition=1, on_delivery=lambda error, _message: error and failures.append(error))
            assert producer.flush(10) == 0
        finally:
            producer.close()
        assert failures == []
        consumer = Consumer({**config, "group.id": "reader", "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("orders", 1, 0)])
            read: list[object] = []
            deadline = time.monotonic() + 15
            while len(read) < 30 and time.monotonic() < deadline:
                read.extend(message for message in consume_available(consumer, 30, 1) if message.error() is None)
            assert len(read) == 30
        finally:
            consumer.close()

        second = describe_partitions(topic)
        assert second[1].records_in_total == 30 and second[1].records_out_total == 30
        assert second[1].bytes_in_total > 3000 and second[0].records_in_total == 0
        # Two readings 10 s apart (the clock is the caller's): 3 records/s in and out on partition 1.
        now = datetime.now(tz=UTC)
        throughput_panels.HISTORY.clear()
        throughput_panels.topic_panel(topic, first, now - timedelta(seconds=10))
        context = throughput_panels.topic_panel(topic, second, now)
        rows = dict(context["throughput_rows"])  # type: ignore[call-overload]
        assert rows[1].records_in == pytest.approx(3.0) and rows[1].records_out == pytest.approx(3.0)
        assert rows[0].records_in == 0.0 and context["throughput_known"]

        # The refresh fragment shows them (a script's fetch; a browser's navigation goes to the page).
        fragment = acme.client.get(reverse("dashboard:topic_throughput", args=["orders"]), HTTP_SEC_FETCH_MODE="cors").content.decode()
        assert "<html" not in fragment and re.search(r'<tr data-partition="1">\s*<td class="number">1</td>\s*<td class="number" title="[0-9.]+">', fragment)
        assert fragment.count('<svg class="chart-svg"') == 2
        navigation = acme.client.get(reverse("dashboard:topic_throughput", args=["orders"]), HTTP_SEC_FETCH_MODE="navigate")
        assert navigation["Location"] == "/topics/orders/#throughput"

        # The overview: the tenant's topics by traffic, from one DescribeState per broker.
        traffic = describe_tenant_traffic(acme.tenant)
        assert {(t.partition, t.records_in_total) for t in traffic} == {(0, 0), (1, 30)}
        throughput_panels.HISTORY.clear()
        earlier = [replace(t, records_in_total=t.records_in_total - 10 if t.partition == 1 else 0) for t in traffic]
        throughput_panels.tenant_panel([topic], earlier, now - timedelta(seconds=5))
        overview = throughput_panels.tenant_panel([topic], traffic, now)
        [(name, rates)] = overview["throughput_topics"]
        assert name == "orders" and rates.records_in == pytest.approx(2.0)
        page = acme.client.get(reverse("dashboard:overview")).content.decode()
        assert 'data-live-url="/throughput/"' in page and 'id="throughput-topics"' in page
        fragment = acme.client.get(reverse("dashboard:overview_throughput")).content.decode()
        assert "<html" not in fragment and '<tr data-topic="orders">' in fragment


def cluster_key_config(member: Member, bootstrap: str) -> dict[str, object]:
    """SDK configuration with a cluster key of ``member``'s tenant allowed everything on topics
    and groups, pushed to the brokers: its traffic is a client's, metered (the control plane's
    own tenant tokens are not)."""
    from webapp.accounts.actions.keys import check_create_key, do_create_key
    from webapp.accounts.actions.service_accounts import do_create_service_account
    from webapp.accounts.models import ApiKeyKind, Role
    from webapp.catalog.actions.acls import check_create_acl, do_create_acl
    from webapp.catalog.models import Operation, PatternType, Permission, ResourceType
    from webapp.provisioning.models import SnapshotKind
    from webapp.provisioning.push import push_snapshots, push_targets
    from webapp.provisioning.snapshots import build_snapshots

    owner = member.actor
    account = do_create_service_account(owner, "app", "", Role.DEVELOPER)
    created = do_create_key(owner, ApiKeyKind.CLUSTER, check_create_key(owner, ApiKeyKind.CLUSTER, account.public_id, ""), "")
    for resource_type in (ResourceType.TOPIC, ResourceType.GROUP):
        binding = check_create_acl(
            owner,
            resource_type=resource_type,
            resource_name="*",
            pattern_type=PatternType.LITERAL,
            principal=account.principal,
            host="*",
            operation=Operation.ALL,
            permission=Permission.ALLOW,
        )
        do_create_acl(owner, binding)
    assert not push_snapshots(build_snapshots([SnapshotKind.PARTITIONS, SnapshotKind.SECURITY]), push_targets())
    return {"bootstrap.servers": bootstrap, "sasl.username": created.key.key_id, "sasl.password": created.secret}
