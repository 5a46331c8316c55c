"""Commit metadata on the wire as confluent-kafka writes it, so that '' and None survive a round trip.

Kafka stores a commit's metadata as a non-nullable string (``__consumer_offsets`` value v3: a
null is kept as ""), so the broker cannot tell "no metadata" from "empty metadata".
confluent-kafka-python tells them apart on the client side: it commits a string with its C
terminator (``strlen + 1`` bytes: '' goes as "\\x00", "ab" as "ab\\x00") and None as "", and
reads back up to the first NUL, "" as None. Weir does the same, so the gRPC door and the Kafka
door hold the same bytes for the same commit, and a group's metadata reads the same from weir
and from confluent-kafka. Metadata with an embedded NUL is refused before it is sent.
"""

from __future__ import annotations

__all__ = ["decode_commit_metadata", "encode_commit_metadata"]


def encode_commit_metadata(metadata: str | None) -> str:
    """What is committed for ``TopicPartition.metadata``: None as "", a string with a NUL terminator.

    Raises ValueError for metadata with an embedded NUL (confluent-kafka refuses it too).
    """
    if metadata is None:
        return ""
    if "\x00" in metadata:
        raise ValueError(f"commit metadata {metadata!r} has an embedded null character")
    return metadata + "\x00"


def decode_commit_metadata(stored: str) -> str | None:
    """``TopicPartition.metadata`` of a committed offset: "" (never set) as None, else up to the first NUL."""
    return None if stored == "" else stored.split("\x00", 1)[0]
