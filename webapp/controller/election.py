"""Leader election rules, as pure functions over one partition's state.

Rules (Kafka's, KIP-966 aside):

* A leader is chosen from the ISR only, in replica order (the first replica is the preferred
  leader), among the brokers that are alive.
* When no ISR member is alive the partition goes offline (leader ``NO_LEADER``), unless the
  topic allows unclean election: then any live replica may lead, and the ISR becomes that
  replica alone, since the others' logs may hold records it lacks.
* A client's election (Kafka's ElectLeaders, ``requested_election``) is PREFERRED (as below) or
  UNCLEAN: a partition without a live leader gets the first live ISR member, else, only when
  the topic allows unclean election, the first live replica.
* The ISR never becomes empty: when the last in-sync replica dies it stays in the ISR, so that
  it can lead again cleanly when it returns.
* Every change the controller makes, a leader change (including going offline) or an ISR
  the controller shrinks itself (a fenced follower), increases the leader epoch by one, as
  ZooKeeper-era Kafka did: a leader takes the ISR of a cluster map only together with a newer
  leader epoch (between epochs its own ISR, confirmed through ``AlterPartition``, is newer than
  any map), so a controller-made ISR change must come with a new epoch to reach the leader.
  ISR changes the leader asks for (``AlterPartition``) keep the epoch.
* A broker in controlled shutdown hands each leadership to another live ISR member and leaves
  every ISR it can leave; what it cannot hand over it keeps, and says so.
* Preferred-leader election gives leadership back to the first replica when it is alive and
  in the ISR; the periodic one acts only for brokers whose imbalance is above a percentage.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from weir.errors import ErrorCode

NO_LEADER = -1  # the leader id of an offline partition, as Kafka writes it

K = TypeVar("K", bound=Hashable)  # whatever a caller keys its partitions by


@dataclass(frozen=True, slots=True)
class PartitionState:
    """One partition's placement: replicas in preference order, ISR, leader and its epoch."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int


def elect_leader(replicas: Sequence[int], isr: Collection[int], live: Collection[int], *, unclean_allowed: bool) -> int:
    """The replica that should lead: the first live ISR member in replica order; with
    ``unclean_allowed``, else the first live replica; else ``NO_LEADER``."""
    for replica in replicas:
        if replica in isr and replica in live:
            return replica
    if unclean_allowed:
        for replica in replicas:
            if replica in live:
                return replica
    return NO_LEADER


def _with_leader(state: PartitionState, leader: int, isr: tuple[int, ...]) -> PartitionState:
    changed = leader != state.leader or isr != state.isr
    epoch = state.leader_epoch + 1 if changed else state.leader_epoch
    return PartitionState(replicas=state.replicas, isr=isr, leader=leader, leader_epoch=epoch)


def after_broker_failure(state: PartitionState, failed: int, live: Collection[int], *, unclean_allowed: bool) -> PartitionState | None:
    """The state once broker ``failed`` is fenced, or ``None`` when the partition is unaffected.

    Precondition: ``failed`` is not in ``live``.
    """
    if failed not in state.replicas or (failed not in state.isr and failed != state.leader):
        return None
    remaining = tuple(replica for replica in state.isr if replica != failed)
    if state.leader != failed:
        # A follower left: only the ISR shrinks (never to nothing, see the module docstring).
        return _with_leader(state, state.leader, remaining or state.isr)
    leader = elect_leader(state.replicas, remaining, live, unclean_allowed=False)
    if leader != NO_LEADER:
        return _with_leader(state, leader, remaining)
    if unclean_allowed:
        leader = elect_leader(state.replicas, (), live, unclean_allowed=True)
        if leader != NO_LEADER:
            return _with_leader(state, leader, (leader,))
    return _with_leader(state, NO_LEADER, remaining or state.isr)


def after_broker_return(state: PartitionState, returned: int, live: Collection[int], *, unclean_allowed: bool) -> PartitionState | None:
    """The state once broker ``returned`` is alive again, or ``None`` when nothing changes.

    Only an offline partition changes: it gets a leader again when an ISR member (or, with
    ``unclean_allowed``, any replica) is back. A partition that has a leader keeps it; the
    returning replica rejoins the ISR through the leader's ``AlterPartition`` once caught up.
    Precondition: ``returned`` is in ``live``.
    """
    if state.leader != NO_LEADER or returned not in state.replicas:
        return None
    leader = elect_leader(state.replicas, state.isr, live, unclean_allowed=unclean_allowed)
    if leader == NO_LEADER:
        return None
    isr = state.isr if leader in state.isr else (leader,)
    return _with_leader(state, leader, isr)


def after_controlled_shutdown(state: PartitionState, stopping: int, live: Collection[int]) -> PartitionState | None:
    """The state once broker ``stopping`` has handed over what it can, or ``None`` when the
    partition does not change.

    A partition it leads moves to the first other live ISR member in replica order (higher
    epoch, ISR without it); with no such member it stays led by ``stopping`` and unchanged
    (the broker reports it as remaining). A partition it follows drops it from the ISR (with a
    new epoch, like every ISR change the controller makes), unless it is the last ISR member
    (an offline partition). Precondition: ``stopping`` is not in ``live``.
    """
    if stopping not in state.replicas or (stopping not in state.isr and stopping != state.leader):
        return None
    remaining = tuple(replica for replica in state.isr if replica != stopping)
    if state.leader == stopping:
        leader = elect_leader(state.replicas, remaining, live, unclean_allowed=False)
        return None if leader == NO_LEADER else _with_leader(state, leader, remaining)
    if not remaining:
        return None
    return _with_leader(state, state.leader, remaining)


def preferred_leader_election(state: PartitionState, live: Collection[int]) -> PartitionState | None:
    """The state with the preferred replica (the first) as leader, or ``None`` when it already
    leads or cannot: it must be alive and in the ISR (Kafka's preferred election never elects
    a replica that may lack records). The leader epoch increases by one."""
    if not state.replicas:
        return None
    preferred = state.replicas[0]
    if state.leader == preferred or preferred not in live or preferred not in state.isr:
        return None
    return _with_leader(state, preferred, state.isr)


def preferred_elections(states: Mapping[K, PartitionState], live: Collection[int], *, imbalance_percentage: float | None) -> dict[K, PartitionState]:
    """The partitions of ``states`` whose leadership goes back to their preferred replica, with
    their new state.

    With ``imbalance_percentage`` (Kafka's ``leader.imbalance.per.broker.percentage``), only the
    partitions of a broker whose share of partitions it prefers but does not lead is above
    that percentage are moved; ``None`` moves every partition that can move (an operator's
    explicit election).
    """
    preferred_by_broker: dict[int, list[K]] = defaultdict(list)
    for key, state in states.items():
        if state.replicas:
            preferred_by_broker[state.replicas[0]].append(key)
    elected: dict[K, PartitionState] = {}
    for broker, keys in preferred_by_broker.items():
        not_led = [key for key in keys if states[key].leader != broker]
        if imbalance_percentage is not None and len(not_led) * 100 <= imbalance_percentage * len(keys):
            continue
        for key in not_led:
            state = preferred_leader_election(states[key], live)
            if state is not None:
                elected[key] = state
    return elected


@dataclass(frozen=True, slots=True)
class RequestedElection:
    """What a client's election (Kafka's ElectLeaders) does to one partition: its new state
    (``None`` when nothing changes), or Kafka's error code and why."""

    state: PartitionState | None
    error_code: int = ErrorCode.NO_ERROR
    reason: str = ""


def requested_election(state: PartitionState, live: Collection[int], *, unclean: bool, unclean_allowed: bool) -> RequestedElection:
    """One partition's answer to a client's election, with Kafka's error codes (KRaft's
    ``ReplicationControlManager.electLeader``).

    PREFERRED (``unclean`` false): ELECTION_NOT_NEEDED when the first replica leads already;
    PREFERRED_LEADER_NOT_AVAILABLE when it is not alive or not in the ISR; else it leads.
    UNCLEAN: ELECTION_NOT_NEEDED when a live broker leads; else the first live ISR member leads
    (a clean election), else, when ``unclean_allowed`` (the topic's
    ``unclean.leader.election.enable``), the first live replica with an ISR of itself alone;
    else ELIGIBLE_LEADERS_NOT_AVAILABLE. Every change increases the leader epoch by one.
    """
    if not unclean:
        if state.replicas and state.leader == state.replicas[0]:
            return RequestedElection(None, ErrorCode.ELECTION_NOT_NEEDED, "the preferred replica leads already")
        elected = preferred_leader_election(state, live)
        if elected is None:
            return RequestedElection(None, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "the preferred replica is not alive or not in the ISR")
        return RequestedElection(elected)
    if state.leader != NO_LEADER and state.leader in live:
        return RequestedElection(None, ErrorCode.ELECTION_NOT_NEEDED, f"broker {state.leader} leads the partition")
    leader = elect_leader(state.replicas, state.isr, live, unclean_allowed=False)
    if leader != NO_LEADER:
        return RequestedElection(_with_leader(state, leader, state.isr))
    if not unclean_allowed:
        return RequestedElection(
            None,
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            "no in-sync replica is alive and the topic does not allow unclean leader election (unclean.leader.election.enable=false)",
        )
    leader = elect_leader(state.replicas, (), live, unclean_allowed=True)
    if leader == NO_LEADER:
        return RequestedElection(None, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica of the partition is alive")
    return RequestedElection(_with_leader(state, leader, (leader,)))
