"""``ConsumerGroupMetadata``: a consumer's group membership, handed to a transactional producer.

confluent-kafka's ``Consumer.consumer_group_metadata()`` returns an opaque object that the
application passes to ``Producer.send_offsets_to_transaction()``; the producer sends the
group id, generation (a KIP-848 member's epoch), member id and group instance id with
TxnOffsetCommit, so that the group coordinator refuses the offsets of a member that has
been fenced out of the group meanwhile (KIP-447). Applications never read its fields.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """A snapshot of a consumer's group membership (immutable; taken when asked for)."""

    group_id: str
    generation_id: int = -1  # -1 and an empty member id: not (yet) a member; the commit is not fenced by membership
    member_id: str = ""
    group_instance_id: str | None = None
