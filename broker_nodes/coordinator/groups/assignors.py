"""Server-side partition assignors: who of a group's members should own which partition.

Pure and deterministic: the same members (ids, subscriptions, previous targets) and the same
topics always give the same assignment, whatever the order of the inputs. Every member is
in the result (with no partitions when it subscribes to nothing that exists), and each
partition of a topic at least one member subscribes to goes to exactly one member that
subscribes to it.

- ``range`` (Kafka's RangeAssignor): per topic, the members subscribed to it in order each
  get a contiguous range; the first ``partitions % members`` get one more.
- ``roundrobin`` (Kafka's RoundRobinAssignor): every subscribed partition, sorted, dealt to
  the members in turn, skipping members not subscribed to its topic.
- ``sticky`` (Kafka's UniformAssignor, ``uniform``): each member keeps what its previous
  target gave it while still subscribed, the rest goes to the least loaded subscribers, then
  partitions move from the most to the least loaded member until no move would make the
  counts of two members that could share it differ by less.

Members are ordered by group.instance.id when they have one (so a restarted static member
keeps its place) and then by member id.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

TopicPartition = tuple[str, int]
Assignment = dict[str, frozenset[TopicPartition]]


class UnknownAssignorError(ValueError):
    """An assignor name that is not one of range, roundrobin, sticky (or an alias)."""

    retriable = False

    def __init__(self, name: str) -> None:
        super().__init__(f"assignor {name!r} is not supported: use one of {', '.join(sorted(ASSIGNORS))}")
        self.name = name


@dataclass(frozen=True, slots=True)
class AssignmentMember:
    """One member as an assignor sees it."""

    member_id: str
    topics: frozenset[str]  # the topics it subscribes to (existing or not)
    instance_id: str = ""
    previous: frozenset[TopicPartition] = field(default_factory=frozenset)  # its previous target (sticky keeps it)

    @property
    def order(self) -> tuple[str, str]:
        return (self.instance_id or self.member_id, self.member_id)


def _ordered(members: Sequence[AssignmentMember]) -> list[AssignmentMember]:
    return sorted(members, key=lambda member: member.order)


def _frozen(assignment: Mapping[str, set[TopicPartition]]) -> Assignment:
    return {member_id: frozenset(partitions) for member_id, partitions in assignment.items()}


def range_assign(members: Sequence[AssignmentMember], partitions: Mapping[str, int]) -> Assignment:
    """Kafka's range assignment, per topic. ``partitions`` maps each existing topic to its partition count."""
    result: dict[str, set[TopicPartition]] = {member.member_id: set() for member in members}
    ordered = _ordered(members)
    for topic in sorted(partitions):
        subscribers = [member for member in ordered if topic in member.topics]
        if not subscribers:
            continue
        per_member, extra = divmod(partitions[topic], len(subscribers))
        for index, member in enumerate(subscribers):
            start = per_member * index + min(index, extra)
            length = per_member + (1 if index < extra else 0)
            result[member.member_id].update((topic, partition) for partition in range(start, start + length))
    return _frozen(result)


def round_robin_assign(members: Sequence[AssignmentMember], partitions: Mapping[str, int]) -> Assignment:
    """Kafka's round robin assignment over every subscribed partition, sorted by topic and partition."""
    result: dict[str, set[TopicPartition]] = {member.member_id: set() for member in members}
    ordered = _ordered(members)
    if not ordered:
        return {}
    position = 0
    for topic in sorted(partitions):
        if not any(topic in member.topics for member in ordered):
            continue
        for partition in range(partitions[topic]):
            # Advance to the next member subscribed to the topic (one exists, so this ends within a lap).
            while topic not in ordered[position % len(ordered)].topics:
                position += 1
            result[ordered[position % len(ordered)].member_id].add((topic, partition))
            position += 1
    return _frozen(result)


def sticky_assign(members: Sequence[AssignmentMember], partitions: Mapping[str, int]) -> Assignment:
    """Kafka's uniform assignment: keep previous targets where still valid, balance the rest."""
    ordered = _ordered(members)
    rank = {member.member_id: index for index, member in enumerate(ordered)}
    topics_of = {member.member_id: member.topics for member in ordered}
    eligible: dict[TopicPartition, list[str]] = {}
    for topic in sorted(partitions):
        subscribers = [member.member_id for member in ordered if topic in member.topics]
        if subscribers:
            for partition in range(partitions[topic]):
                eligible[(topic, partition)] = subscribers
    result: dict[str, set[TopicPartition]] = {member.member_id: set() for member in ordered}
    owner: dict[TopicPartition, str] = {}
    for member in ordered:
        for topic_partition in sorted(member.previous):
            if topic_partition in eligible and topic_partition not in owner and topic_partition[0] in topics_of[member.member_id]:
                owner[topic_partition] = member.member_id
                result[member.member_id].add(topic_partition)

    def least_loaded(candidates: Sequence[str]) -> str:
        return min(candidates, key=lambda member_id: (len(result[member_id]), rank[member_id]))

    # Partitions with the fewest possible owners first, so that the flexible ones fill the gaps.
    for topic_partition in sorted((tp for tp in eligible if tp not in owner), key=lambda tp: (len(eligible[tp]), tp)):
        chosen = least_loaded(eligible[topic_partition])
        owner[topic_partition] = chosen
        result[chosen].add(topic_partition)

    # Each move lowers the sum of squared member loads, so the loop ends; the bound is a guard.
    for _ in range(len(eligible) * max(1, len(ordered))):
        move = _find_move(result, eligible, rank)
        if move is None:
            break
        topic_partition, source, target = move
        result[source].discard(topic_partition)
        result[target].add(topic_partition)
    return _frozen(result)


def _find_move(
    result: Mapping[str, set[TopicPartition]], eligible: Mapping[TopicPartition, list[str]], rank: Mapping[str, int]
) -> tuple[TopicPartition, str, str] | None:
    """A partition of a heavily loaded member that a member with at least two fewer may take, or None."""
    for source in sorted(result, key=lambda member_id: (-len(result[member_id]), rank[member_id])):
        load = len(result[source])
        # The most recently numbered partitions move first, so low partitions stay put.
        for topic_partition in sorted(result[source], reverse=True):
            candidates = [member_id for member_id in eligible[topic_partition] if len(result[member_id]) <= load - 2]
            if candidates:
                target = min(candidates, key=lambda member_id: (len(result[member_id]), rank[member_id]))
                return topic_partition, source, target
    return None


ASSIGNORS: Mapping[str, Callable[[Sequence[AssignmentMember], Mapping[str, int]], Assignment]] = {
    "range": range_assign,
    "roundrobin": round_robin_assign,
    "sticky": sticky_assign,
}
# Names clients use for the same assignors: Kafka's server-side "uniform", confluent-kafka's
# "cooperative-sticky", Kafka's class-style "round_robin".
ALIASES: Mapping[str, str] = {"uniform": "sticky", "cooperative-sticky": "sticky", "round_robin": "roundrobin"}


def canonical_assignor_name(name: str) -> str:
    """``range``, ``roundrobin`` or ``sticky`` for ``name`` or an alias; UnknownAssignorError otherwise."""
    lowered = name.strip().lower()
    canonical = ALIASES.get(lowered, lowered)
    if canonical not in ASSIGNORS:
        raise UnknownAssignorError(name)
    return canonical


def assign(name: str, members: Sequence[AssignmentMember], partitions: Mapping[str, int]) -> Assignment:
    """The target assignment computed by the assignor called ``name`` (or an alias)."""
    return ASSIGNORS[canonical_assignor_name(name)](members, partitions)
