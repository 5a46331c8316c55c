"""Leader election rules, as pure functions over one partition's state.

Rules (Kafka's, KIP-966 aside):

* A leader is chosen from the ISR only, in replica order (the first replica is the preferred
  leader), among the brokers that are alive.
* When no ISR member is alive the partition goes offline (leader ``NO_LEADER``), unless the
  topic allows unclean election: then any live replica may lead, and the ISR becomes that
  replica alone, since the others' logs may hold records it lacks.
* The ISR never becomes empty: when the last in-sync replica dies it stays in the ISR, so that
  it can lead again cleanly when it returns.
* Every change the controller makes, a leader change (including going offline) or an ISR
  the controller shrinks itself (a fenced follower), increases the leader epoch by one, as
  ZooKeeper-era Kafka did: a leader takes the ISR of a cluster map only together with a newer
  leader epoch (between epochs its own ISR, confirmed through ``AlterPartition``, is newer than
  any map), so a controller-made ISR change must come with a new epoch to reach the leader.
  ISR changes the leader asks for (``AlterPartition``) keep the epoch.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

NO_LEADER = -1  # the leader id of an offline partition, as Kafka writes it


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
