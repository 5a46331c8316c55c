"""Consumer-group configuration: assignor names, what is sent only when set, and the new keys."""

from __future__ import annotations

import pytest

from weir.config import CONSUMER, ClientConfig
from weir.errors import KafkaError, KafkaException

BASE = {"bootstrap.servers": "127.0.0.1:9092", "group.id": "billing"}


@pytest.mark.parametrize(
    ("given", "sent"),
    [
        ("range", "range"),
        ("roundrobin", "roundrobin"),
        ("uniform", "sticky"),
        ("cooperative-sticky", "sticky"),
        ("Sticky", "sticky"),
        ("cooperative-sticky,range", "sticky"),
        ("range, roundrobin", "range"),
    ],
)
def test_assignment_strategy_names_map_to_the_coordinators_assignors(given: str, sent: str) -> None:
    assert ClientConfig({**BASE, "partition.assignment.strategy": given}, CONSUMER)["partition.assignment.strategy"] == sent


def test_without_an_assignment_strategy_the_group_default_applies() -> None:
    assert ClientConfig(BASE, CONSUMER)["partition.assignment.strategy"] is None
    assert ClientConfig({**BASE, "group.remote.assignor": "uniform"}, CONSUMER)["partition.assignment.strategy"] == "sticky"


def test_an_unknown_assignor_is_refused_naming_it() -> None:
    with pytest.raises(KafkaException) as raised:
        ClientConfig({**BASE, "partition.assignment.strategy": "range,balanced"}, CONSUMER)
    assert raised.value.error.code() == KafkaError._INVALID_ARG
    assert '"balanced"' in raised.value.error.str() and "cooperative-sticky" in raised.value.error.str()


def test_is_set_tells_given_keys_from_defaults() -> None:
    config = ClientConfig({**BASE, "session.timeout.ms": 6000, "group.instance.id": "billing-0"}, CONSUMER)
    assert config.is_set("session.timeout.ms") and not config.is_set("max.poll.interval.ms")
    assert config["group.instance.id"] == "billing-0"
    assert config["heartbeat.interval.ms"] == 3000 and config["max.poll.interval.ms"] == 300000
