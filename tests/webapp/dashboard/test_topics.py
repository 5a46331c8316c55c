"""Topic pages: create, detail, configs, partitions, delete; roles and other tenants."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.support.processes import free_port
from tests.webapp.dashboard.conftest import Member
from webapp.accounts.models import Role
from webapp.catalog.actions.topics import check_create_topic, do_create_topic
from webapp.catalog.models import Partition, Topic
from webapp.catalog.topic_names import TENANT_TOPIC_NAME_MAX_LENGTH
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning.models import JobKind, ProvisioningJob

pytestmark = pytest.mark.django_db


def create_topic(member: Member, name: str, partitions: int = 2) -> Topic:
    return do_create_topic(member.actor, check_create_topic(member.actor, name, partitions, 1, {})).topic


def test_create_topic_stores_it_and_shows_its_job_inline(owner: Member) -> None:
    response = owner.client.post(
        reverse("dashboard:topic_create"), {"name": "orders", "partitions": 3, "replication_factor": 1, "configs": "retention.ms=60000\n"}
    )
    topic = Topic.objects.get(tenant=owner.tenant, name="orders")
    job = ProvisioningJob.objects.get(tenant=owner.tenant, kind=JobKind.CREATE_TOPIC)
    assert response.status_code == 302
    assert response["Location"] == f"/topics/orders/?job={job.public_id}"
    assert topic.partition_count == 3 and topic.configs == {"retention.ms": "60000"}
    page = owner.client.get(response["Location"])
    assert page.status_code == 200
    assert job.public_id in page.content.decode()
    assert b'http-equiv="refresh"' in page.content  # the job is still pending


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "../x"}, "may contain only"),
        ({"name": "__internal"}, "reserved"),
        ({"partitions": 0}, "greater than or equal to 1"),
        ({"partitions": 5000}, "partitions on the standard plan"),
        ({"replication_factor": 3}, "eplication factor"),
        ({"configs": "retention.ms=soon"}, "retention.ms"),
        ({"configs": "no.such.key=1"}, "no.such.key"),
        ({"configs": "not a pair"}, "is not key=value"),
    ],
)
def test_create_topic_with_bad_input_shows_the_error_and_creates_nothing(owner: Member, fields: dict[str, object], message: str) -> None:
    data = {"name": "orders", "partitions": 1, "replication_factor": 1, "configs": ""} | fields
    response = owner.client.post(reverse("dashboard:topic_create"), data)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Topic.objects.exists() and not ProvisioningJob.objects.exists()


def test_create_duplicate_topic_says_it_exists(owner: Member) -> None:
    create_topic(owner, "orders")
    response = owner.client.post(reverse("dashboard:topic_create"), {"name": "orders", "partitions": 1, "replication_factor": 1})
    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert Topic.objects.filter(name="orders").count() == 1


def test_viewer_sees_topics_but_cannot_create(roles: dict[str, Member]) -> None:
    create_topic(roles[Role.OWNER], "orders")
    viewer = roles[Role.VIEWER]
    assert viewer.client.get(reverse("dashboard:topic", args=["orders"])).status_code == 200
    assert b"Create topic" not in viewer.client.get(reverse("dashboard:topics")).content
    assert viewer.client.get(reverse("dashboard:topic_create")).status_code == 403
    assert viewer.client.post(reverse("dashboard:topic_create"), {"name": "x", "partitions": 1, "replication_factor": 1}).status_code == 403
    assert not Topic.objects.filter(name="x").exists()


def test_developer_can_create_topics(roles: dict[str, Member]) -> None:
    response = roles[Role.DEVELOPER].client.post(reverse("dashboard:topic_create"), {"name": "events", "partitions": 1, "replication_factor": 1})
    assert response.status_code == 302
    assert Topic.objects.filter(name="events").exists()


@pytest.mark.parametrize(
    "page",
    [
        "dashboard:topic",
        "dashboard:topic_configs",
        "dashboard:topic_partitions",
        "dashboard:topic_delete",
        "dashboard:topic_messages",
        "dashboard:topic_produce",
    ],
)
def test_another_tenants_topic_is_not_found(owner: Member, other_owner: Member, page: str) -> None:
    create_topic(other_owner, "secret-plans")
    assert owner.client.get(reverse(page, args=["secret-plans"])).status_code == 404
    assert owner.client.post(reverse(page, args=["secret-plans"]), {"confirmation": "secret-plans", "partitions": 9}).status_code == 404
    assert Topic.objects.get(name="secret-plans").partition_count == 2


def test_detail_shows_partitions_as_unavailable_when_the_broker_does_not_answer(owner: Member) -> None:
    create_topic(owner, "orders", partitions=2)
    content = owner.client.get(reverse("dashboard:topic", args=["orders"])).content.decode()
    assert "did not answer" in content
    assert content.count("unavailable") >= 2
    assert "retention.ms" in content


def test_edit_configs_sets_and_deletes_overrides(owner: Member) -> None:
    topic = do_create_topic(owner.actor, check_create_topic(owner.actor, "orders", 1, 1, {"retention.ms": "60000"})).topic
    response = owner.client.post(reverse("dashboard:topic_configs", args=["orders"]), {"cleanup.policy": "compact", "retention.ms": ""})
    topic.refresh_from_db()
    assert response.status_code == 302
    assert topic.configs == {"cleanup.policy": "compact"}
    assert ProvisioningJob.objects.filter(kind=JobKind.ALTER_TOPIC_CONFIGS).count() == 1


def test_edit_configs_rejects_a_bad_value(owner: Member) -> None:
    create_topic(owner, "orders")
    response = owner.client.post(reverse("dashboard:topic_configs", args=["orders"]), {"segment.bytes": "-5"})
    assert response.status_code == 200
    assert "segment.bytes" in response.content.decode()
    assert Topic.objects.get(name="orders").configs == {}


def test_add_partitions_grows_and_refuses_to_shrink(owner: Member) -> None:
    create_topic(owner, "orders", partitions=2)
    shrink = owner.client.post(reverse("dashboard:topic_partitions", args=["orders"]), {"partitions": 1})
    assert shrink.status_code == 200 and "can only be added" in shrink.content.decode()
    grow = owner.client.post(reverse("dashboard:topic_partitions", args=["orders"]), {"partitions": 4})
    assert grow.status_code == 302
    assert Partition.objects.filter(topic__name="orders").count() == 4


def test_delete_needs_the_typed_name(owner: Member) -> None:
    create_topic(owner, "orders")
    wrong = owner.client.post(reverse("dashboard:topic_delete", args=["orders"]), {"confirmation": "order"})
    assert wrong.status_code == 200 and "not the topic" in wrong.content.decode()
    assert Topic.objects.filter(name="orders").exists()
    right = owner.client.post(reverse("dashboard:topic_delete", args=["orders"]), {"confirmation": "orders"})
    job = ProvisioningJob.objects.get(kind=JobKind.DELETE_TOPIC)
    assert right["Location"] == reverse("dashboard:job", args=[job.public_id])
    assert not Topic.objects.filter(name="orders").exists()


def test_topic_list_costs_a_fixed_number_of_queries(owner: Member, django_assert_max_num_queries) -> None:  # type: ignore[no-untyped-def]
    for index in range(8):
        create_topic(owner, f"topic-{index}", partitions=1)
    with django_assert_max_num_queries(8):
        response = owner.client.get(reverse("dashboard:topics"))
    assert response.content.decode().count("topic-") >= 8


def test_create_form_limits_the_name_to_what_fits_a_partition_directory(owner: Member) -> None:
    page = owner.client.get(reverse("dashboard:topic_create")).content.decode()
    assert f'maxlength="{TENANT_TOPIC_NAME_MAX_LENGTH}"' in page
    assert "255-byte directory name" in page

    data = {"name": "a" * (TENANT_TOPIC_NAME_MAX_LENGTH + 1), "partitions": 1, "replication_factor": 1, "configs": ""}
    response = owner.client.post(reverse("dashboard:topic_create"), data)
    assert response.status_code == 200
    assert (
        f"at most {TENANT_TOPIC_NAME_MAX_LENGTH} characters: the tenant prefix and partition number must fit a 255-byte directory name"
        in response.content.decode()
    )
    assert not Topic.objects.exists()


@pytest.mark.parametrize(("brokers", "expected"), [(1, 1), (3, 3)])
def test_create_form_without_replication_factor_takes_min_of_three_and_the_brokers(owner: Member, brokers: int, expected: int) -> None:
    for node_id in range(2, brokers + 1):  # broker 1 is the fixture's
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=free_port(), state=BrokerState.ONLINE)
    page = owner.client.get(reverse("dashboard:topic_create")).content.decode()
    assert f'placeholder="{expected}"' in page and "min(3, the number of brokers)" in page

    response = owner.client.post(reverse("dashboard:topic_create"), {"name": "orders", "partitions": 2, "replication_factor": "", "configs": ""})
    assert response.status_code == 302
    assert Topic.objects.get(tenant=owner.tenant, name="orders").replication_factor == expected
