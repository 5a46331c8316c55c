"""Broker sessions: which brokers are alive, under which broker epoch.

A broker registers and gets a new broker epoch, higher than every epoch handed out before by
this table; its heartbeats carry that epoch. A heartbeat with another epoch (a restarted
broker's old session, or a session that expired) is refused, and the broker must register
again. A session expires when no accepted heartbeat came for ``session_timeout_ms``.

Epochs start at ``first_epoch``; the service seeds it from the wall clock in milliseconds, so
that a controller that takes over hands out epochs above those of the one before it.

Brokers the database knows as online when a controller starts are *adopted*: they get a
session without an epoch, which expires like any other unless the broker registers again
(its first heartbeat to the new controller is refused as stale, so it does).

A broker in controlled shutdown keeps its session (it heartbeats while it hands over its
leaderships) but is no longer *electable*: no election makes it a leader until it registers
again. When it has handed everything over its session ends, and later heartbeats are stale.

Leases: a registered broker holds a stream open to the controller (``open_lease``). When that
stream ends from the broker's side (``lease_lost``), the session is *disconnected*: a killed
process closes its connections at once, a slow or stopped one keeps them. A disconnected
session is *gone* (``grace_left`` is 0) when it stayed disconnected for the grace (no new lease, no
heartbeat since) -- the service then checks the broker's address and fences it early. Sessions
that never held a lease (adopted ones, or brokers of a controller that ran before) are only
ever fenced by the session timeout.

Thread-safety: every method takes one lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

NO_EPOCH = -1  # the epoch of an adopted session: no heartbeat matches it


@dataclass(slots=True)
class _Session:
    epoch: int
    deadline: float  # clock seconds after which the session is expired
    shutting_down: bool = False  # in controlled shutdown: alive, but never elected
    lease: int = 0  # the id of the lease stream held for this session; 0: none
    lost_at: float | None = None  # clock seconds when its lease stream ended from the broker's side
    heard_at: float = 0.0  # clock seconds of the registration or last accepted heartbeat


class BrokerSessions:
    """See the module docstring. ``monotonic`` returns seconds (``time.monotonic`` in production)."""

    def __init__(self, *, session_timeout_ms: int, first_epoch: int, monotonic: Callable[[], float]) -> None:
        if session_timeout_ms <= 0:
            raise ValueError(f"session timeout must be positive, not {session_timeout_ms} ms")
        self.session_timeout_ms = session_timeout_ms
        self._timeout_seconds = session_timeout_ms / 1000.0
        self._next_epoch = first_epoch
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._sessions: dict[int, _Session] = {}
        self._next_lease = 1

    def register(self, node_id: int) -> int:
        """Start a new session for ``node_id`` (replacing any other) and return its epoch."""
        with self._lock:
            epoch = self._next_epoch
            self._next_epoch += 1
            now = self._monotonic()
            self._sessions[node_id] = _Session(epoch, now + self._timeout_seconds, heard_at=now)
            return epoch

    def adopt(self, node_id: int) -> None:
        """Give ``node_id`` a session without an epoch, so that it expires unless it registers."""
        with self._lock:
            self._sessions.setdefault(node_id, _Session(NO_EPOCH, self._monotonic() + self._timeout_seconds))

    def heartbeat(self, node_id: int, epoch: int) -> bool:
        """Extend the session of ``node_id``; False when ``epoch`` is not its live session's."""
        with self._lock:
            session = self._sessions.get(node_id)
            now = self._monotonic()
            if session is None or session.epoch == NO_EPOCH or session.epoch != epoch or now > session.deadline:
                return False
            session.deadline = now + self._timeout_seconds
            session.heard_at = now
            return True

    def _current(self, node_id: int, epoch: int) -> _Session | None:
        """The session of ``node_id`` when its epoch is ``epoch`` (never an adopted one). Hold the lock."""
        session = self._sessions.get(node_id)
        return session if session is not None and session.epoch == epoch and epoch != NO_EPOCH else None

    def is_current(self, node_id: int, epoch: int) -> bool:
        """True when ``epoch`` is the live session of ``node_id``."""
        with self._lock:
            return self._current(node_id, epoch) is not None

    def expire(self) -> list[int]:
        """Remove and return (in id order) the brokers whose session has expired."""
        with self._lock:
            now = self._monotonic()
            expired = sorted(node_id for node_id, session in self._sessions.items() if now > session.deadline)
            for node_id in expired:
                del self._sessions[node_id]
            return expired

    def open_lease(self, node_id: int, epoch: int) -> int | None:
        """Attach a new lease stream to the live session ``epoch`` of ``node_id`` (replacing any
        other, and ending a disconnection); its id, or None when ``epoch`` is not the live session."""
        with self._lock:
            session = self._current(node_id, epoch)
            if session is None:
                return None
            session.lease = self._next_lease
            self._next_lease += 1
            session.lost_at = None
            return session.lease

    def holds_lease(self, node_id: int, epoch: int, lease: int) -> bool:
        """True while ``lease`` is the lease of the live session ``epoch`` of ``node_id``."""
        with self._lock:
            session = self._current(node_id, epoch)
            return session is not None and session.lease == lease

    def lease_lost(self, node_id: int, epoch: int, lease: int) -> bool:
        """The broker's end of ``lease`` closed: mark the session disconnected; False (nothing
        changes) when ``lease`` is no longer the lease of the live session ``epoch``."""
        with self._lock:
            session = self._current(node_id, epoch)
            if session is None or session.lease != lease:
                return False
            session.lease = 0
            session.lost_at = self._monotonic()
            return True

    def grace_left(self, node_id: int, epoch: int, grace_seconds: float) -> float | None:
        """Seconds of ``grace_seconds`` left to the live session ``epoch`` of ``node_id`` since it
        lost its lease (0.0: the grace is over, the broker is gone); None when it is not
        disconnected (it opened another lease or heartbeated since, or is not the live session)."""
        with self._lock:
            session = self._current(node_id, epoch)
            if session is None or session.lost_at is None or session.lease or session.heard_at > session.lost_at:
                return None
            return max(0.0, session.lost_at + grace_seconds - self._monotonic())

    def live(self) -> frozenset[int]:
        """Brokers with a session that has not been found expired yet."""
        with self._lock:
            return frozenset(self._sessions)

    def electable(self) -> frozenset[int]:
        """Live brokers that may become leaders: not in controlled shutdown."""
        with self._lock:
            return frozenset(node_id for node_id, session in self._sessions.items() if not session.shutting_down)

    def begin_shutdown(self, node_id: int, epoch: int) -> bool:
        """Mark the session ``epoch`` of ``node_id`` as shutting down; False when it is not the
        live session (nothing changes then). A new registration clears the mark."""
        with self._lock:
            session = self._current(node_id, epoch)
            if session is None:
                return False
            session.shutting_down = True
            return True

    def end(self, node_id: int, epoch: int) -> bool:
        """End the session ``epoch`` of ``node_id`` (a completed controlled shutdown, or a broker
        fenced because its lease was lost), so that it
        neither expires later nor accepts heartbeats; False when it is not the live session."""
        with self._lock:
            if self._current(node_id, epoch) is None:
                return False
            del self._sessions[node_id]
            return True
