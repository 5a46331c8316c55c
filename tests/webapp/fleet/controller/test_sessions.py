"""Broker sessions: epochs, heartbeats, expiry; time comes from a manual clock."""

from __future__ import annotations

from webapp.controller.sessions import BrokerSessions


class ManualMonotonic:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def sessions(clock: ManualMonotonic, timeout_ms: int = 9000) -> BrokerSessions:
    return BrokerSessions(session_timeout_ms=timeout_ms, first_epoch=1000, monotonic=clock)


def test_registering_again_gives_a_higher_epoch_and_refuses_the_old_one() -> None:
    table = sessions(ManualMonotonic())
    first = table.register(1)
    second = table.register(1)
    assert second > first
    assert not table.heartbeat(1, first)
    assert table.heartbeat(1, second)


def test_heartbeats_within_the_timeout_keep_the_session() -> None:
    clock = ManualMonotonic()
    table = sessions(clock)
    epoch = table.register(1)
    for _ in range(5):
        clock.now += 8.0
        assert table.heartbeat(1, epoch)
        assert table.expire() == []
    assert table.live() == {1}


def test_session_expires_after_the_timeout_without_heartbeat() -> None:
    clock = ManualMonotonic()
    table = sessions(clock)
    table.register(1)
    epoch_two = table.register(2)
    clock.now += 5.0
    table.heartbeat(2, epoch_two)
    clock.now += 4.5
    assert table.expire() == [1]
    assert table.live() == {2}
    assert table.expire() == []


def test_heartbeat_after_expiry_is_refused_until_the_broker_registers() -> None:
    clock = ManualMonotonic()
    table = sessions(clock)
    epoch = table.register(1)
    clock.now += 10.0
    assert not table.heartbeat(1, epoch)
    table.expire()
    assert not table.heartbeat(1, epoch)
    assert table.heartbeat(1, table.register(1))


def test_adopted_broker_expires_unless_it_registers() -> None:
    clock = ManualMonotonic()
    table = sessions(clock)
    table.adopt(1)
    table.adopt(2)
    assert not table.heartbeat(1, 0)
    clock.now += 5.0
    table.register(2)
    clock.now += 4.5
    assert table.expire() == [1]
    assert table.live() == {2}


def test_a_broker_shutting_down_stays_live_but_is_not_electable_until_it_registers() -> None:
    clock = ManualMonotonic()
    table = sessions(clock)
    epoch = table.register(1)
    table.register(2)
    assert not table.begin_shutdown(1, epoch + 100)  # not its session: nothing changes
    assert table.electable() == {1, 2}
    assert table.begin_shutdown(1, epoch)
    assert table.live() == {1, 2}
    assert table.electable() == {2}
    assert table.heartbeat(1, epoch)
    table.register(1)
    assert table.electable() == {1, 2}


def test_an_ended_session_neither_expires_nor_accepts_heartbeats() -> None:
    clock = ManualMonotonic()
    table = sessions(clock)
    epoch = table.register(1)
    assert not table.end(1, epoch - 1)
    assert table.end(1, epoch)
    assert table.live() == frozenset()
    assert not table.heartbeat(1, epoch)
    clock.now += 60.0
    assert table.expire() == []


def test_an_adopted_session_cannot_shut_down_or_end() -> None:
    table = sessions(ManualMonotonic())
    table.adopt(1)
    assert not table.begin_shutdown(1, -1)
    assert not table.end(1, -1)
    assert table.live() == {1}
