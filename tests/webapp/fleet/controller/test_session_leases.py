"""Sessions' leases: a broker whose lease stream closed is gone once the grace passes without a
new lease or a heartbeat (``BrokerSessions.grace_left``); a manual clock, no database."""

from __future__ import annotations

import pytest

from webapp.controller.sessions import BrokerSessions

GRACE = 0.3


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def sessions(clock: Clock) -> BrokerSessions:
    return BrokerSessions(session_timeout_ms=9000, first_epoch=1, monotonic=clock)


def test_a_lost_lease_is_gone_after_the_grace(sessions: BrokerSessions, clock: Clock) -> None:
    epoch = sessions.register(1)
    lease = sessions.open_lease(1, epoch)
    assert lease is not None
    assert sessions.grace_left(1, epoch, GRACE) is None  # connected
    assert sessions.lease_lost(1, epoch, lease)
    assert sessions.grace_left(1, epoch, GRACE) == pytest.approx(GRACE)
    clock.now += GRACE / 2
    assert sessions.grace_left(1, epoch, GRACE) == pytest.approx(GRACE / 2)
    clock.now += GRACE / 2
    assert sessions.grace_left(1, epoch, GRACE) == 0.0
    # Gone, but the session itself has not expired: the service decides (it checks the address).
    assert sessions.expire() == []


def test_a_new_lease_within_the_grace_keeps_the_broker(sessions: BrokerSessions, clock: Clock) -> None:
    epoch = sessions.register(1)
    first = sessions.open_lease(1, epoch)
    assert first is not None and sessions.lease_lost(1, epoch, first)
    clock.now += GRACE / 2
    second = sessions.open_lease(1, epoch)
    assert second is not None and second != first
    clock.now += GRACE * 10
    assert sessions.grace_left(1, epoch, GRACE) is None
    assert sessions.holds_lease(1, epoch, second) and not sessions.holds_lease(1, epoch, first)


def test_a_heartbeat_after_the_loss_keeps_the_broker(sessions: BrokerSessions, clock: Clock) -> None:
    epoch = sessions.register(1)
    lease = sessions.open_lease(1, epoch)
    assert lease is not None and sessions.lease_lost(1, epoch, lease)
    clock.now += GRACE / 2
    assert sessions.heartbeat(1, epoch)
    clock.now += GRACE * 10
    assert sessions.grace_left(1, epoch, GRACE) is None


def test_the_end_of_a_replaced_lease_changes_nothing(sessions: BrokerSessions, clock: Clock) -> None:
    epoch = sessions.register(1)
    old = sessions.open_lease(1, epoch)
    new = sessions.open_lease(1, epoch)
    assert old is not None and new is not None
    assert not sessions.lease_lost(1, epoch, old)  # the broker already holds a newer one
    clock.now += GRACE * 10
    assert sessions.grace_left(1, epoch, GRACE) is None


def test_leases_of_other_sessions_are_refused_and_ignored(sessions: BrokerSessions, clock: Clock) -> None:
    old_epoch = sessions.register(1)
    lease = sessions.open_lease(1, old_epoch)
    assert lease is not None
    new_epoch = sessions.register(1)  # the broker restarted: its old session's lease means nothing
    assert not sessions.holds_lease(1, old_epoch, lease)
    assert not sessions.lease_lost(1, old_epoch, lease)
    assert sessions.open_lease(1, old_epoch) is None
    clock.now += GRACE * 10
    assert sessions.grace_left(1, new_epoch, GRACE) is None
    assert sessions.grace_left(1, old_epoch, GRACE) is None


def test_an_adopted_session_never_holds_a_lease(sessions: BrokerSessions, clock: Clock) -> None:
    # A broker of the controller that ran before: only its session timeout (or a registration) ends it.
    sessions.adopt(2)
    assert sessions.open_lease(2, -1) is None
    clock.now += 9.5
    assert sessions.expire() == [2]


def test_a_stalled_broker_keeps_its_lease_and_expires_with_the_session_timeout(sessions: BrokerSessions, clock: Clock) -> None:
    epoch = sessions.register(1)
    lease = sessions.open_lease(1, epoch)
    assert lease is not None
    clock.now += 8.9
    assert sessions.expire() == [] and sessions.grace_left(1, epoch, GRACE) is None
    clock.now += 0.2
    assert sessions.expire() == [1]
