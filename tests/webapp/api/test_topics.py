"""``/api/v1/topics``: create, list, get, delete, partitions, configs; validation and limits."""

from __future__ import annotations

import pytest

from tests.support.processes import free_port
from tests.webapp.api.conftest import TenantFixture
from webapp.accounts.models import Role
from webapp.catalog.models import Partition, Topic
from webapp.catalog.topic_names import TENANT_TOPIC_NAME_MAX_LENGTH
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.models import JobKind, JobState, ProvisioningJob

pytestmark = pytest.mark.django_db

TOPICS = "/api/v1/topics"


def create(fixture: TenantFixture, role: str = Role.DEVELOPER, **body: object):  # type: ignore[no-untyped-def]
    payload = {"topic_name": "orders", "partitions_count": 3, **body}
    return fixture.client(role).post(TOPICS, payload, format="json")


def test_create_topic_stores_topic_placement_and_pending_job(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    response = create(acme, configs=[{"name": "retention.ms", "value": "60000"}])

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["kind"] == "KafkaTopic"
    assert body["topic_name"] == "orders"
    assert body["partitions_count"] == 3
    assert body["replication_factor"] == 1
    assert body["cluster_id"] == acme.tenant.public_id
    assert body["metadata"]["self"].endswith("/api/v1/topics/orders")
    assert body["configs"]["related"].endswith("/api/v1/topics/orders/configs")
    assert body["job"]["kind"] == JobKind.CREATE_TOPIC
    assert body["job"]["state"] == JobState.PENDING
    topic = Topic.objects.get(tenant=acme.tenant, name="orders")
    assert topic.configs == {"retention.ms": "60000"}
    assert list(Partition.objects.filter(topic=topic).values_list("index", "leader")) == [(0, 1), (1, 1), (2, 1)]
    job = ProvisioningJob.objects.get(public_id=body["job"]["id"])
    assert (job.tenant, job.target, job.created_by) == (acme.tenant, "orders", acme.members[Role.DEVELOPER].user)


@pytest.mark.parametrize("name", ["../x", "..", ".", "", "a" * 250, "__consumer_offsets", "has space", "tenant~orders", "ünicode"])
def test_create_topic_with_invalid_name_answers_400_and_creates_nothing(acme: TenantFixture, registered_broker: BrokerNode, name: str) -> None:
    response = create(acme, topic_name=name)

    assert response.status_code == 400, response.json()
    assert "topic_name" in response.json()["errors"]
    assert not Topic.objects.exists()
    assert not ProvisioningJob.objects.exists()


def test_create_topic_with_unknown_and_bad_configs_names_each_key(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    response = create(
        acme, configs=[{"name": "retention.mss", "value": "1"}, {"name": "retention.ms", "value": "soon"}, {"name": "cleanup.policy", "value": "compact"}]
    )

    assert response.status_code == 400
    body = response.json()
    assert body["error_code"] == 400
    assert set(body["errors"]["configs"]) == {"retention.mss", "retention.ms"}
    assert not Topic.objects.exists()


def test_create_topic_with_too_many_partitions_for_the_plan_answers_400(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    limit = acme.tenant.limits.max_partitions_per_topic

    response = create(acme, partitions_count=limit + 1)

    assert response.status_code == 400
    assert "partitions_count" in response.json()["errors"]
    assert create(acme, topic_name="zero", partitions_count=0).status_code == 400
    assert not Topic.objects.exists()


def test_create_topic_with_replication_factor_above_broker_count_answers_400_and_creates_nothing(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    response = create(acme, replication_factor=2)

    assert response.status_code == 400
    assert "replication_factor" in response.json()["errors"]
    assert not Topic.objects.exists()
    assert not Partition.objects.exists()
    assert not ProvisioningJob.objects.exists()


def test_create_topic_without_brokers_answers_400(acme: TenantFixture) -> None:
    assert create(acme).status_code == 400
    assert not Topic.objects.exists()


def test_create_duplicate_topic_answers_409(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme).status_code == 201

    response = create(acme, partitions_count=1)

    assert response.status_code == 409
    assert response.json()["error_code"] == 409
    assert Topic.objects.get().partition_count == 3


def test_same_topic_name_in_two_tenants_is_allowed(acme: TenantFixture, globex: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme).status_code == 201
    assert create(globex).status_code == 201


def test_plan_topic_count_limit_is_enforced(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    acme.tenant.plan = "free"
    acme.tenant.save()
    for number in range(acme.tenant.limits.max_topics):
        assert create(acme, topic_name=f"t{number}", partitions_count=1).status_code == 201

    response = create(acme, topic_name="one-too-many", partitions_count=1)

    assert response.status_code == 400
    assert not Topic.objects.filter(name="one-too-many").exists()


def test_list_topics_filters_by_name_and_paginates(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    for name in ("orders", "payments", "orders-dlq"):
        assert create(acme, topic_name=name, partitions_count=1).status_code == 201

    everything = acme.client(Role.VIEWER).get(TOPICS).json()
    filtered = acme.client(Role.VIEWER).get(TOPICS, {"name": "orders"}).json()
    first_page = acme.client(Role.VIEWER).get(TOPICS, {"page_size": 2}).json()
    second_page = acme.client(Role.VIEWER).get(first_page["next"]).json()

    assert {topic["topic_name"] for topic in everything["results"]} == {"orders", "payments", "orders-dlq"}
    assert {topic["topic_name"] for topic in filtered["results"]} == {"orders", "orders-dlq"}
    assert len(first_page["results"]) == 2 and len(second_page["results"]) == 1


def test_a_topic_in_a_page_reads_as_its_own_resource(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    # The page renders rows of columns and its health from one query; the topic's own page
    # renders the instance: both say the same, links, health counts and timestamps included.
    assert create(acme, topic_name="orders", partitions_count=2, configs=[{"name": "min.insync.replicas", "value": "2"}]).status_code == 201
    assert create(acme, topic_name="payments", partitions_count=1).status_code == 201
    Partition.objects.filter(topic__name="orders", index=1).update(isr=[], leader=-1)
    client = acme.client(Role.VIEWER)

    page = client.get(TOPICS).json()["results"]

    for entry in page:
        assert entry == client.get(f"{TOPICS}/{entry['topic_name']}").json()
    orders = next(entry for entry in page if entry["topic_name"] == "orders")
    assert (orders["offline_partitions_count"], orders["under_replicated_partitions_count"], orders["under_min_isr_partitions_count"]) == (1, 1, 2)


def test_get_and_delete_topic(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme, topic_name="a.b_c-1").status_code == 201

    fetched = acme.client(Role.VIEWER).get(f"{TOPICS}/a.b_c-1")
    deleted = acme.client(Role.DEVELOPER).delete(f"{TOPICS}/a.b_c-1")

    assert fetched.status_code == 200 and fetched.json()["topic_name"] == "a.b_c-1"
    assert deleted.status_code == 202
    assert deleted.json()["job"]["kind"] == JobKind.DELETE_TOPIC
    assert not Topic.objects.exists()
    assert not Partition.objects.exists()
    assert acme.client().get(f"{TOPICS}/a.b_c-1").status_code == 404


def test_grow_partitions_places_only_the_new_ones(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme, partitions_count=2).status_code == 201

    response = acme.client().post(f"{TOPICS}/orders/partitions", {"partitions_count": 5}, format="json")

    assert response.status_code == 202, response.json()
    assert response.json()["partitions_count"] == 5
    assert response.json()["job"]["kind"] == JobKind.CREATE_PARTITIONS
    assert list(Partition.objects.order_by("index").values_list("index", flat=True)) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("count", [2, 1, 0])
def test_shrinking_or_keeping_partitions_answers_400(acme: TenantFixture, registered_broker: BrokerNode, count: int) -> None:
    assert create(acme, partitions_count=2).status_code == 201

    response = acme.client().post(f"{TOPICS}/orders/partitions", {"partitions_count": count}, format="json")

    assert response.status_code == 400
    assert "partitions_count" in response.json()["errors"]
    assert Topic.objects.get().partition_count == 2
    assert Partition.objects.count() == 2


def test_partitions_when_broker_is_down_show_placement_marked_unavailable(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme, partitions_count=2).status_code == 201

    listing = acme.client(Role.VIEWER).get(f"{TOPICS}/orders/partitions")
    single = acme.client(Role.VIEWER).get(f"{TOPICS}/orders/partitions/1")
    missing = acme.client(Role.VIEWER).get(f"{TOPICS}/orders/partitions/2")

    assert listing.status_code == 200
    data = listing.json()["data"]
    assert [partition["partition_id"] for partition in data] == [0, 1]
    assert data[0]["leader"] == {"broker_id": 1}
    assert data[0]["replicas"] == [{"broker_id": 1}]
    assert data[0]["available"] is False and data[0]["log_end_offset"] is None
    assert single.status_code == 200 and single.json()["partition_id"] == 1
    assert missing.status_code == 404


def test_configs_list_every_declared_key_with_defaults_and_overrides(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme, configs=[{"name": "retention.ms", "value": "60000"}]).status_code == 201

    data = acme.client(Role.VIEWER).get(f"{TOPICS}/orders/configs").json()["data"]

    by_name = {entry["name"]: entry for entry in data}
    assert by_name["retention.ms"]["value"] == "60000"
    assert by_name["retention.ms"]["is_default"] is False
    assert by_name["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert by_name["cleanup.policy"] == {**by_name["cleanup.policy"], "value": "delete", "is_default": True, "source": "DEFAULT_CONFIG"}


def test_alter_configs_sets_and_deletes_overrides(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme, configs=[{"name": "retention.ms", "value": "60000"}]).status_code == 201

    response = acme.client().post(
        f"{TOPICS}/orders/configs:alter",
        {"data": [{"name": "retention.ms", "operation": "DELETE"}, {"name": "cleanup.policy", "value": "compact", "operation": "SET"}]},
        format="json",
    )

    assert response.status_code == 202, response.json()
    assert response.json()["job"]["kind"] == JobKind.ALTER_TOPIC_CONFIGS
    assert Topic.objects.get().configs == {"cleanup.policy": "compact"}


def test_alter_configs_with_unknown_key_or_bad_value_changes_nothing(acme: TenantFixture, registered_broker: BrokerNode) -> None:
    assert create(acme, configs=[{"name": "retention.ms", "value": "60000"}]).status_code == 201

    response = acme.client().post(
        f"{TOPICS}/orders/configs:alter",
        {"data": [{"name": "retention.ms", "value": "1000"}, {"name": "no.such.key", "value": "1"}, {"name": "segment.bytes", "value": "1"}]},
        format="json",
    )

    assert response.status_code == 400
    assert set(response.json()["errors"]["configs"]) == {"no.such.key", "segment.bytes"}
    assert Topic.objects.get().configs == {"retention.ms": "60000"}
    assert ProvisioningJob.objects.filter(kind=JobKind.ALTER_TOPIC_CONFIGS).count() == 0


def test_longest_name_that_fits_a_partition_directory_is_created_and_one_more_is_refused_with_the_reason(
    acme: TenantFixture, registered_broker: BrokerNode
) -> None:
    limit = TENANT_TOPIC_NAME_MAX_LENGTH
    # tn- and ten characters, '~', and '-9999': what is left of a 255-byte directory name.
    assert limit == 255 - len(acme.tenant.public_id) - len("~") - len("-9999") == 236

    assert create(acme, topic_name="a" * limit).status_code == 201
    response = create(acme, topic_name="b" * (limit + 1))

    assert response.status_code == 400
    [message] = response.json()["errors"]["topic_name"]
    assert message == f"A topic name is at most {limit} characters: the tenant prefix and partition number must fit a 255-byte directory name."
    assert not Topic.objects.filter(name="b" * (limit + 1)).exists()


def test_schema_states_the_name_limit_and_the_replication_default(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/api/schema/?format=json").json()
    properties = schema["components"]["schemas"]["TopicCreateRequest"]["properties"]
    assert properties["topic_name"]["maxLength"] == TENANT_TOPIC_NAME_MAX_LENGTH
    assert "255-byte directory name" in properties["topic_name"]["description"]
    assert "replication_factor" not in schema["components"]["schemas"]["TopicCreateRequest"].get("required", [])
    assert "min(3, the number of brokers)" in properties["replication_factor"]["description"]


@pytest.mark.parametrize(("brokers", "expected"), [(1, 1), (2, 2), (3, 3), (4, 3)])
def test_topic_without_replication_factor_gets_min_of_three_and_the_brokers(acme: TenantFixture, brokers: int, expected: int) -> None:
    for node_id in range(1, brokers + 1):
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)
    # A broker known to be down is not counted: a replica there could not be created.
    BrokerNode.objects.create(node_id=99, host="127.0.0.1", port=free_port(), state=BrokerState.OFFLINE)

    response = create(acme, partitions_count=2)

    assert response.status_code == 201, response.json()
    assert response.json()["replication_factor"] == expected
    assert all(len(replicas) == expected for replicas in Partition.objects.values_list("replicas", flat=True))


def test_explicit_replication_factor_is_kept(acme: TenantFixture) -> None:
    for node_id in (1, 2, 3):
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)
    response = create(acme, replication_factor=1)
    assert response.status_code == 201 and response.json()["replication_factor"] == 1
