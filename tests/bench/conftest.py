"""The benchmarks' stacks in tests: internal topics of 3 partitions instead of Kafka's 50.

A `make up` stack creates ``__consumer_offsets`` and ``__transaction_state`` with Kafka's default
of 50 partitions each (300 replicas on three brokers); the stacks these tests start inherit the
environment, and with 3 partitions each starts in about 35 s instead of 55 s on the 2-core
machine. What the tests check (a scenario runs end to end and prints its table) does not depend
on those counts.
"""

from __future__ import annotations

import pytest

SMALL_INTERNAL_TOPICS = {"WEIR_OFFSETS_TOPIC_NUM_PARTITIONS": "3", "WEIR_TRANSACTION_STATE_TOPIC_NUM_PARTITIONS": "3"}


@pytest.fixture(autouse=True)
def small_internal_topics(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SMALL_INTERNAL_TOPICS.items():
        monkeypatch.setenv(name, value)
