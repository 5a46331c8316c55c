import pytest

from bench.broker_launcher import free_loopback_port
from bench.systems.base import SystemUnavailable
from bench.systems.nats_jetstream import NatsJetStreamSystem
from bench.systems.redis_streams import RedisStreamsSystem


def test_redis_on_a_closed_port_is_unavailable() -> None:
    with pytest.raises(SystemUnavailable) as raised:
        RedisStreamsSystem(f"redis://127.0.0.1:{free_loopback_port()}/0")
    assert raised.value.system == "Redis Streams"


def test_nats_on_a_closed_port_is_unavailable() -> None:
    with pytest.raises(SystemUnavailable) as raised:
        NatsJetStreamSystem(f"nats://127.0.0.1:{free_loopback_port()}")
    assert raised.value.system == "NATS JetStream"
