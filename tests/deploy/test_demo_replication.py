"""The demo topic `make up` creates is replicated on up to three brokers, so that killing one shows a failover."""

from __future__ import annotations

import pytest

from webapp.catalog.models import Topic
from webapp.fleet.models import BrokerNode, BrokerState
from webapp.provisioning import tasks
from webapp.provisioning.demo import DEMO_TOPIC, set_up_demo

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_celery(monkeypatch: pytest.MonkeyPatch) -> None:
    # What demo stores is checked here; its pushes to brokers are tested with real processes.
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: None)


def _brokers(online: int, offline: int = 0) -> None:
    for node_id in range(1, online + offline + 1):
        state = BrokerState.ONLINE if node_id <= online else BrokerState.OFFLINE
        BrokerNode.objects.create(node_id=node_id, host="127.0.0.1", port=19091 + node_id, state=state)


@pytest.mark.parametrize(("online", "offline", "replicas"), [(1, 0, 1), (2, 0, 2), (3, 0, 3), (5, 0, 3), (3, 2, 3), (2, 1, 2)])
def test_demo_topic_has_as_many_replicas_as_brokers_up_to_three(online: int, offline: int, replicas: int) -> None:
    _brokers(online, offline)
    set_up_demo("demo")
    topic = Topic.objects.get(name=DEMO_TOPIC)
    assert topic.replication_factor == replicas
    assert {len(partition.replicas) for partition in topic.partitions.all()} == {replicas}
