"""Fixtures of the coordinator tests that stand up several coordinators over one broker's log."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from broker_nodes.server.broker import Broker
from tests.broker_nodes.coordinator.test_classic_group_records import Coordinator


@pytest.fixture
def coordinators(broker: Broker) -> Iterator[Callable[[int], Coordinator]]:
    """Makes coordinators of the group's offsets partition over ``broker``'s log (the requesting module's fixture), each
    with the leadership epoch given, as after a failover; every one made is shut down at the end."""
    made: list[Coordinator] = []

    def make(epoch: int) -> Coordinator:
        made.append(Coordinator(broker, epoch))
        return made[-1]

    yield make
    for coordinator in made:
        coordinator.store.shutdown()
