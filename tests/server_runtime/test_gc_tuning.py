"""The start-up objects of a server are frozen out of the collector's passes, and garbage made before is collected first."""

from __future__ import annotations

import gc
import weakref

from server_runtime.gc_tuning import freeze_startup_objects


class Node:
    def __init__(self) -> None:
        self.peer: Node | None = None


def test_garbage_is_collected_before_the_live_objects_are_frozen() -> None:
    cycle_a, cycle_b = Node(), Node()
    cycle_a.peer, cycle_b.peer = cycle_b, cycle_a
    collected = weakref.ref(cycle_a)
    del cycle_a, cycle_b  # a reference cycle: only a collection frees it
    kept = Node()
    try:
        frozen = freeze_startup_objects()
        assert collected() is None  # not frozen for ever as garbage
        assert frozen > 0  # (the count then falls as frozen objects are freed by reference counting)
        assert not any(obj is kept for obj in gc.get_objects())  # frozen objects are in no generation a pass walks
    finally:
        gc.unfreeze()
    assert any(obj is kept for obj in gc.get_objects())
