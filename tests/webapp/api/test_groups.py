"""``/api/v1/consumer-groups``: list, get, members, lag, lag summary, offset reset (dry run
and applied), delete; roles, other tenants, brokers down.

Most tests put an in-memory admin per tenant behind ``webapp.consumer_groups`` (any group
state at once); the brokers-down tests use the real client against a port nothing listens
on, and the last test runs against a real broker with a real consumer group.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.fake_group_admin import FakeGroupAdmin, FakeMember
from tests.support.group_broker import join_and_commit, produce
from tests.support.processes import free_port
from tests.webapp.api.conftest import TenantFixture
from tests.webapp.group_broker import control_plane_broker, provision_topic, tenant_client_config
from webapp import consumer_groups
from webapp.accounts.models import Role

pytestmark = pytest.mark.django_db

GROUPS = "/api/v1/consumer-groups"
FIRST_TIMESTAMP_MS = 1_700_000_000_000  # 2023-11-14T22:13:20Z


@pytest.fixture
def admins(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeGroupAdmin]:
    """One fake cluster per tenant public id, made on first use: what the tenant's brokers show it."""
    fakes: dict[str, FakeGroupAdmin] = {}

    @contextmanager
    def admin_client(tenant_public_id: str) -> Iterator[FakeGroupAdmin]:
        yield fakes.setdefault(tenant_public_id, FakeGroupAdmin())

    monkeypatch.setattr(consumer_groups, "admin_client", admin_client)
    return fakes


@pytest.fixture
def cluster(acme: TenantFixture, admins: dict[str, FakeGroupAdmin]) -> FakeGroupAdmin:
    """acme's groups: busy (two members, lag 6 on orders-0), idle (no members)."""
    fake = admins.setdefault(acme.tenant.public_id, FakeGroupAdmin())
    fake.add_topic("orders", [10, 20], first_timestamp_ms=FIRST_TIMESTAMP_MS)
    fake.add_group(
        "busy",
        {("orders", 0): 4, ("orders", 1): 20},
        [FakeMember("member-a", "client-a", [("orders", 0)], instance_id="app-1"), FakeMember("member-b", "client-b", [("orders", 1)])],
        assignor="sticky",
    )
    fake.add_group("idle", {("orders", 0): 7})
    return fake


# ------------------------------------------------------------------ reads


def test_list_shows_each_group_with_state_members_and_links(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    response = acme.client(Role.VIEWER).get(GROUPS)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["kind"] == "KafkaConsumerGroupList"
    busy, idle = body["data"]
    assert (busy["consumer_group_id"], busy["state"], busy["members_count"], busy["partition_assignor"]) == ("busy", "STABLE", 2, "sticky")
    assert (idle["consumer_group_id"], idle["state"], idle["members_count"]) == ("idle", "EMPTY", 0)
    assert busy["kind"] == "KafkaConsumerGroup" and busy["cluster_id"] == acme.tenant.public_id
    assert busy["metadata"]["self"].endswith("/api/v1/consumer-groups/busy")
    assert busy["metadata"]["resource_name"] == f"crn://weir/tenant={acme.tenant.public_id}/consumer-group=busy"
    assert busy["coordinator"]["broker_id"] == 1 and busy["coordinator"]["related"].endswith("/api/v1/brokers/1")
    assert busy["lag_summary"]["related"].endswith("/api/v1/consumer-groups/busy/lag-summary")


def test_list_filters_by_state_and_refuses_unknown_states(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    empty = acme.client(Role.VIEWER).get(GROUPS, {"state": "EMPTY"})
    unknown = acme.client(Role.VIEWER).get(GROUPS, {"state": "SLEEPING"})

    assert [group["consumer_group_id"] for group in empty.json()["data"]] == ["idle"]
    assert unknown.status_code == 400 and "SLEEPING" in unknown.json()["errors"]["state"][0]


def test_get_group_and_its_consumers(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    client = acme.client(Role.VIEWER)

    group = client.get(f"{GROUPS}/busy").json()
    consumers = client.get(f"{GROUPS}/busy/consumers").json()
    member = client.get(f"{GROUPS}/busy/consumers/member-a").json()

    assert group["state"] == "STABLE" and group["consumers"]["related"].endswith("/consumer-groups/busy/consumers")
    assert consumers["kind"] == "KafkaConsumerList"
    assert [consumer["consumer_id"] for consumer in consumers["data"]] == ["member-a", "member-b"]
    assert member == consumers["data"][0]
    assert member["instance_id"] == "app-1" and member["client_id"] == "client-a" and member["consumer_group_id"] == "busy"
    assert member["assignments"] == [{"topic_name": "orders", "partition_id": 0}] == member["target_assignments"]
    assert member["metadata"]["self"].endswith("/consumer-groups/busy/consumers/member-a")


def test_unknown_group_and_consumer_answer_404(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    client = acme.client(Role.VIEWER)

    for path in ("nobody", "nobody/consumers", "nobody/lags", "nobody/lag-summary", "busy/consumers/nobody"):
        response = client.get(f"{GROUPS}/{path}")
        assert response.status_code == 404, path
        assert response.json()["error_code"] == 404 and "nobody" in response.json()["message"]


def test_lags_give_committed_end_lag_and_owner_per_partition(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    cluster.add_topic("payments", [5])
    cluster.groups["busy"].members[1].assignment.append(("payments", 0))

    body = acme.client(Role.VIEWER).get(f"{GROUPS}/busy/lags").json()

    assert body["kind"] == "KafkaConsumerLagList"
    rows = [(row["topic_name"], row["partition_id"], row["current_offset"], row["log_end_offset"], row["lag"], row["consumer_id"]) for row in body["data"]]
    assert rows == [("orders", 0, 4, 10, 6, "member-a"), ("orders", 1, 20, 20, 0, "member-b"), ("payments", 0, None, 5, None, "member-b")]
    assert body["data"][0]["client_id"] == "client-a" and body["data"][0]["instance_id"] == "app-1"


def test_lag_summary_gives_total_and_most_lagging_partition(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    summary = acme.client(Role.VIEWER).get(f"{GROUPS}/busy/lag-summary").json()
    idle = acme.client(Role.VIEWER).get(f"{GROUPS}/idle/lag-summary").json()

    assert summary["kind"] == "KafkaConsumerGroupLagSummary"
    assert (summary["total_lag"], summary["max_lag"], summary["max_lag_topic_name"], summary["max_lag_partition_id"]) == (6, 6, "orders", 0)
    assert (summary["max_lag_consumer_id"], summary["max_lag_client_id"], summary["max_lag_instance_id"]) == ("member-a", "client-a", "app-1")
    assert (idle["total_lag"], idle["max_lag"], idle["max_lag_consumer_id"], idle["partitions_count"]) == (3, 3, None, 1)


def test_other_tenants_groups_are_not_found(acme: TenantFixture, globex: TenantFixture, cluster: FakeGroupAdmin) -> None:
    client = globex.client(Role.OWNER)

    assert client.get(GROUPS).json()["data"] == []
    assert client.get(f"{GROUPS}/busy").status_code == 404
    assert client.delete(f"{GROUPS}/idle").status_code == 404
    assert "idle" in cluster.groups


# ------------------------------------------------------------------ offset reset


def reset(fixture: TenantFixture, group: str, role: str = Role.DEVELOPER, **body: object):  # type: ignore[no-untyped-def]
    return fixture.client(role).post(f"{GROUPS}/{group}/offsets:reset", body, format="json")


def test_reset_is_a_dry_run_by_default(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    response = reset(acme, "idle", to="earliest", topics=["orders"])

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["kind"], body["dry_run"], body["applied"], body["active_members_count"]) == ("KafkaConsumerGroupOffsetReset", True, False, 0)
    assert body["data"] == [
        {"topic_name": "orders", "partition_id": 0, "current_offset": 7, "new_offset": 0},
        {"topic_name": "orders", "partition_id": 1, "current_offset": None, "new_offset": 0},
    ]
    assert cluster.groups["idle"].offsets == {("orders", 0): 7}
    assert "alter_consumer_group_offsets" not in cluster.calls


@pytest.mark.parametrize(
    ("body", "offsets"),
    [
        ({"to": "latest", "topics": ["orders"]}, {("orders", 0): 10, ("orders", 1): 20}),
        ({"to": "timestamp", "topics": ["orders"], "timestamp": "2023-11-14T22:13:25Z"}, {("orders", 0): 5, ("orders", 1): 5}),
        ({"to": "offset", "topics": ["orders"], "offset": 3}, {("orders", 0): 3, ("orders", 1): 3}),
        ({"to": "offsets", "offsets": [{"topic_name": "orders", "partition_id": 1, "offset": 11}]}, {("orders", 0): 7, ("orders", 1): 11}),
    ],
)
def test_reset_applied_writes_the_planned_offsets(acme: TenantFixture, cluster: FakeGroupAdmin, body: dict, offsets: dict) -> None:
    response = reset(acme, "idle", dry_run=False, **body)

    assert response.status_code == 200, response.json()
    assert response.json()["applied"] is True
    assert cluster.groups["idle"].offsets == offsets


def test_reset_of_an_active_group_answers_409_and_changes_nothing(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    preview = reset(acme, "busy", to="earliest", topics=["orders"])
    applied = reset(acme, "busy", to="earliest", topics=["orders"], dry_run=False)

    assert preview.status_code == 200 and preview.json()["active_members_count"] == 2
    assert applied.status_code == 409
    assert applied.json() == {"error_code": 409, "message": "Consumer group 'busy' has 2 active members: stop them before resetting its offsets."}
    assert cluster.groups["busy"].offsets == {("orders", 0): 4, ("orders", 1): 20}
    assert "alter_consumer_group_offsets" not in cluster.calls


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"to": "earliest"}, "topics"),
        ({"to": "sometime", "topics": ["orders"]}, "to"),
        ({"to": "timestamp", "topics": ["orders"]}, "timestamp"),
        ({"to": "timestamp", "topics": ["orders"], "timestamp": "1969-12-31T23:59:59Z"}, "timestamp"),
        ({"to": "offset", "topics": ["orders"]}, "offset"),
        ({"to": "offset", "topics": ["orders"], "offset": -1}, "offset"),
        ({"to": "offsets", "offsets": []}, "offsets"),
        ({"to": "offsets", "topics": ["orders"], "offsets": [{"topic_name": "orders", "partition_id": 0, "offset": 1}]}, "topics"),
        ({"to": "latest", "topics": ["missing"]}, "topics"),
        ({"to": "latest", "topics": ["not a topic!"]}, "topics"),
        ({"to": "offset", "topics": ["missing"], "offset": 1}, "topics"),
    ],
)
def test_reset_with_bad_input_answers_400_naming_the_field(acme: TenantFixture, cluster: FakeGroupAdmin, body: dict, field: str) -> None:
    response = reset(acme, "idle", dry_run=False, **body)

    assert response.status_code == 400, response.json()
    assert field in response.json()["errors"]
    assert cluster.groups["idle"].offsets == {("orders", 0): 7}


def test_viewers_may_not_reset_or_delete(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    assert reset(acme, "idle", Role.VIEWER, to="earliest", topics=["orders"]).status_code == 403
    assert acme.client(Role.VIEWER).delete(f"{GROUPS}/idle").status_code == 403
    assert "idle" in cluster.groups and cluster.calls == []


# ------------------------------------------------------------------ delete and brokers down


def test_delete_removes_an_empty_group(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    response = acme.client(Role.DEVELOPER).delete(f"{GROUPS}/idle")

    assert response.status_code == 204
    assert "idle" not in cluster.groups
    assert acme.client(Role.DEVELOPER).delete(f"{GROUPS}/idle").status_code == 404


def test_delete_of_an_active_group_answers_409_naming_its_members(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    response = acme.client(Role.DEVELOPER).delete(f"{GROUPS}/busy")

    assert response.status_code == 409
    assert response.json()["message"] == "Consumer group 'busy' has 2 active members: stop them before deleting it."
    assert "busy" in cluster.groups


def test_brokers_answering_with_transport_errors_give_503(acme: TenantFixture, cluster: FakeGroupAdmin) -> None:
    cluster.unreachable = True

    response = acme.client(Role.VIEWER).get(f"{GROUPS}/busy")

    assert response.status_code == 503
    assert response.json()["error_code"] == 503 and "_TRANSPORT" in response.json()["message"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("get", "", None),
        ("get", "/busy", None),
        ("get", "/busy/consumers", None),
        ("get", "/busy/lags", None),
        ("get", "/busy/lag-summary", None),
        ("delete", "/busy", None),
        ("post", "/busy/offsets:reset", {"to": "earliest", "topics": ["orders"]}),
    ],
)
def test_no_broker_listening_answers_503_with_the_error_body(acme: TenantFixture, settings, method: str, path: str, body: dict | None) -> None:  # type: ignore[no-untyped-def]
    settings.WEIR_BOOTSTRAP_SERVERS = f"127.0.0.1:{free_port()}"

    response = getattr(acme.client(Role.OWNER), method)(GROUPS + path, body, format="json")

    assert response.status_code == 503
    assert response.json() == {"error_code": 503, "message": f"No broker answers at {settings.WEIR_BOOTSTRAP_SERVERS}; try again once the brokers are up."}


# ------------------------------------------------------------------ end to end


def test_groups_api_against_a_real_broker_and_consumer(acme: TenantFixture, globex: TenantFixture, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """acme's consumer commits 6+4 records of orders, 3 more arrive: the API shows the group,
    its member and lag; reset is refused while the consumer runs and applied once it left;
    globex sees nothing of it."""
    with control_plane_broker(tmp_path / "broker", settings):
        provision_topic(acme.actor(), "orders", partitions=2)
        config = tenant_client_config(acme.actor())
        produce(config, "orders", {0: 6, 1: 4})
        consumer = join_and_commit(config, "orders", "billing", records=10)
        client = acme.client(Role.DEVELOPER)
        try:
            produce(config, "orders", {0: 3})

            [group] = client.get(GROUPS).json()["data"]
            assert (group["consumer_group_id"], group["state"], group["members_count"]) == ("billing", "STABLE", 1)
            [member] = client.get(f"{GROUPS}/billing/consumers").json()["data"]
            assert member["client_id"] == "billing-client" and len(member["assignments"]) == 2
            lags = client.get(f"{GROUPS}/billing/lags").json()["data"]
            assert [(row["partition_id"], row["current_offset"], row["log_end_offset"], row["lag"]) for row in lags] == [(0, 6, 9, 3), (1, 4, 4, 0)]
            assert client.get(f"{GROUPS}/billing/lag-summary").json()["total_lag"] == 3
            assert globex.client(Role.OWNER).get(f"{GROUPS}/billing").status_code == 404

            refused = client.post(f"{GROUPS}/billing/offsets:reset", {"to": "earliest", "topics": ["orders"], "dry_run": False}, format="json")
            assert refused.status_code == 409 and "has 1 active member" in refused.json()["message"]
        finally:
            consumer.close()

        applied = client.post(f"{GROUPS}/billing/offsets:reset", {"to": "earliest", "topics": ["orders"], "dry_run": False}, format="json")
        assert applied.status_code == 200, applied.json()
        assert [(row["partition_id"], row["current_offset"], row["new_offset"]) for row in applied.json()["data"]] == [(0, 6, 0), (1, 4, 0)]
        assert client.get(f"{GROUPS}/billing/lag-summary").json()["total_lag"] == 13
        assert client.delete(f"{GROUPS}/billing").status_code == 204
        assert client.get(GROUPS).json()["data"] == []
