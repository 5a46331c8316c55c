"""The high watermark of a replicated partition: the offset every in-sync replica has reached.

A leader's log is created with ``auto_advance_high_watermark = False`` once the partition has
followers: appends no longer commit by themselves, and the leader moves the high watermark
with :func:`advance_high_watermark` when a follower's fetch or an ISR change shows that every
in-sync replica holds more of the log. Consumers read only below the high watermark, so a
record they see survives the loss of any replica but the last in-sync one.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker_nodes.storage.log import PartitionLog


def high_watermark_over(leader_log_end_offset: int, follower_log_end_offsets: Sequence[int]) -> int:
    """The smallest log end offset among the leader and its in-sync followers."""
    return min([leader_log_end_offset, *follower_log_end_offsets])


def advance_high_watermark(log: PartitionLog, in_sync_follower_log_end_offsets: Sequence[int]) -> bool:
    """Move ``log``'s high watermark up to what every in-sync replica holds; True when it moved.

    The high watermark never moves backwards here: a follower that was just added to the ISR
    may report less than the current high watermark only if it was added by mistake, and
    consumers may already have read up to it.
    """
    # Most calls (every read of a follower's fetch) find nothing to move: they need not take the
    # log's lock. The log end and the followers' offsets only grow while this broker leads, and
    # whoever grows them calls this afterwards, so a move missed here is made by that call.
    if high_watermark_over(log.log_end_offset, in_sync_follower_log_end_offsets) <= log.high_watermark:
        return False
    with log.locked():
        candidate = high_watermark_over(log.log_end_offset, in_sync_follower_log_end_offsets)
        if candidate <= log.high_watermark:
            return False
        log.update_high_watermark(candidate)
        return True
