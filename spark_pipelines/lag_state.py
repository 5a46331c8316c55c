"""What the lag job keeps between runs, as the JSON document ``webapp.metering.writer.save_state("lag")`` stores.

Burrow keeps its windows in memory; the lag job runs once a minute in a fresh process, so
it saves them, with its cursor, in one document written last in a run (a run that dies
earlier leaves the previous document, and the next run redoes its work from there)::

    {
      "version": 1,
      "offsets": {"__consumer_offsets": {"0": 1234, ...}},     # next offset to read per partition
      "windows": [                                              # one per group and partition
        {"tenant_id": "tn-…", "group": "billing", "topic": "orders", "partition": 0,
         "last_commit_ms": 1700000000000,
         "commits": [[offset, timestamp_ms, commit_order, lag_or_null], ...]}   # oldest first
      ],
      "end_offsets": [                                          # recent end offsets per partition
        {"tenant_id": "tn-…", "topic": "orders", "partition": 0,
         "observed": [[observed_at_ms, end_offset], ...]}
      ]
    }

:class:`LagState` converts between that document and the rows of the transforms' schemas
(``WINDOW_SCHEMA``, ``END_OFFSET_SCHEMA`` of :mod:`spark_pipelines.transforms.lag`). A
document of another shape raises :class:`InvalidLagStateError` naming what is wrong: the job
must not start from an empty state by accident, which would forget every window.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spark_pipelines.read_range import Offsets

STATE_VERSION = 1


class InvalidLagStateError(ValueError):
    """The saved state of the lag pipeline is not what this job writes; ``state`` is it."""

    retriable = False

    def __init__(self, state: object, problem: str) -> None:
        super().__init__(f"the saved state of pipeline 'lag' is unusable ({problem}): {json.dumps(state, default=str)[:500]}")
        self.state = state
        self.problem = problem


@dataclass(frozen=True)
class LagState:
    """The cursor, the windows and the end offset history; rows in the transforms' column names."""

    offsets: Offsets = field(default_factory=dict)
    windows: tuple[dict[str, Any], ...] = ()
    end_offsets: tuple[dict[str, Any], ...] = ()

    # ------------------------------------------------------------------ document -> state

    @classmethod
    def from_document(cls, document: Mapping[str, Any], *, window_size: int) -> LagState:
        """The state of a saved document (``{}``: the first run); each window and history cut to
        its newest ``window_size`` entries (the setting may have shrunk since)."""
        if not document:
            return cls()
        if document.get("version") != STATE_VERSION:
            raise InvalidLagStateError(document, f"expected version {STATE_VERSION}")
        windows: list[dict[str, Any]] = []
        for item in _list(document, "windows"):
            key = _partition_key(document, item, with_group=True)
            last_commit_ms = _integer(document, item.get("last_commit_ms"), "a window's last_commit_ms")
            commits = _list(item, "commits", document)
            for slot, entry in enumerate(commits[-window_size:]):
                if not isinstance(entry, list) or len(entry) != 4:
                    raise InvalidLagStateError(document, f"a commit of window {key} is not [offset, timestamp_ms, commit_order, lag]")
                offset, timestamp_ms, commit_order, lag = entry
                windows.append(
                    {
                        **key,
                        "slot": slot,
                        "committed_offset": _integer(document, offset, "a commit's offset"),
                        "commit_timestamp_ms": _integer(document, timestamp_ms, "a commit's timestamp"),
                        "commit_order": _integer(document, commit_order, "a commit's order"),
                        "lag_at_commit": None if lag is None else _integer(document, lag, "a commit's lag"),
                        "last_commit_ms": last_commit_ms,
                    }
                )
        end_offsets: list[dict[str, Any]] = []
        for item in _list(document, "end_offsets"):
            key = _partition_key(document, item, with_group=False)
            for entry in _list(item, "observed", document)[-window_size:]:
                if not isinstance(entry, list) or len(entry) != 2:
                    raise InvalidLagStateError(document, f"an end offset observation of {key} is not [observed_at_ms, end_offset]")
                end_offsets.append(
                    {
                        **key,
                        "observed_at_ms": _integer(document, entry[0], "an observation time"),
                        "end_offset": _integer(document, entry[1], "an end offset"),
                    }
                )
        return cls(offsets=_offsets(document), windows=tuple(windows), end_offsets=tuple(end_offsets))

    # ------------------------------------------------------------------ rows -> document

    @classmethod
    def from_rows(cls, offsets: Offsets, windows: Iterable[Mapping[str, Any]], end_offsets: Iterable[Mapping[str, Any]]) -> LagState:
        """The state to save: the cursor and the rows the transforms produced (any order)."""
        return cls(
            offsets={topic: dict(partitions) for topic, partitions in offsets.items()},
            windows=tuple(dict(row) for row in windows),
            end_offsets=tuple(dict(row) for row in end_offsets),
        )

    def to_document(self) -> dict[str, Any]:
        """The JSON document (see the module docstring), windows and observations sorted."""
        windows: dict[tuple, dict[str, Any]] = {}
        for row in sorted(self.windows, key=lambda row: (row["tenant_id"], row["group"], row["topic"], row["partition"], row["slot"])):
            key = (row["tenant_id"], row["group"], row["topic"], row["partition"])
            window = windows.setdefault(
                key,
                {
                    "tenant_id": row["tenant_id"],
                    "group": row["group"],
                    "topic": row["topic"],
                    "partition": int(row["partition"]),
                    "last_commit_ms": int(row["last_commit_ms"]),
                    "commits": [],
                },
            )
            lag = row["lag_at_commit"]
            window["commits"].append(
                [int(row["committed_offset"]), int(row["commit_timestamp_ms"]), int(row["commit_order"]), None if lag is None else int(lag)]
            )
        histories: dict[tuple, dict[str, Any]] = {}
        for row in sorted(self.end_offsets, key=lambda row: (row["tenant_id"], row["topic"], row["partition"], row["observed_at_ms"])):
            key = (row["tenant_id"], row["topic"], row["partition"])
            history = histories.setdefault(key, {"tenant_id": row["tenant_id"], "topic": row["topic"], "partition": int(row["partition"]), "observed": []})
            history["observed"].append([int(row["observed_at_ms"]), int(row["end_offset"])])
        return {"version": STATE_VERSION, "offsets": self.offsets, "windows": list(windows.values()), "end_offsets": list(histories.values())}


def _list(container: Mapping[str, Any], key: str, document: Mapping[str, Any] | None = None) -> list[Any]:
    value = container.get(key, [])
    if not isinstance(value, list):
        raise InvalidLagStateError(document if document is not None else container, f"{key!r} must be a list")
    return value


def _integer(document: Mapping[str, Any], value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidLagStateError(document, f"{what} must be an integer, not {value!r}")
    return value


def _partition_key(document: Mapping[str, Any], item: Any, *, with_group: bool) -> dict[str, Any]:
    names = ("tenant_id", "group", "topic") if with_group else ("tenant_id", "topic")
    if not isinstance(item, dict) or not all(isinstance(item.get(name), str) and item.get(name) for name in names):
        raise InvalidLagStateError(document, f"an entry lacks a non-empty {', '.join(names)}: {item!r}"[:300])
    partition = _integer(document, item.get("partition"), "a partition number")
    return {**{name: item[name] for name in names}, "partition": partition}


def _offsets(document: Mapping[str, Any]) -> Offsets:
    offsets = document.get("offsets", {})
    if not isinstance(offsets, dict):
        raise InvalidLagStateError(document, "'offsets' must be an object")
    result: Offsets = {}
    for topic, partitions in offsets.items():
        if not isinstance(partitions, dict) or not all(
            str(partition).isdigit() and isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0 for partition, offset in partitions.items()
        ):
            raise InvalidLagStateError(document, f"offsets of {topic!r} must map partition numbers to offsets >= 0")
        result[str(topic)] = {str(partition): offset for partition, offset in partitions.items()}
    return result
