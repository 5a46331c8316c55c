"""weir.aio's callback bridge without a broker: a client thread calling a coroutine callback waits
for it to finish on the event loop; a call from the loop's own thread never blocks the loop."""

from __future__ import annotations

import asyncio
import threading

from weir.aio.common import IN_CALLBACK, on_loop, wrap_callbacks


def test_a_client_thread_waits_for_the_callback_run_on_the_loop() -> None:
    ran_on: list[tuple[int, bool]] = []

    async def callback(value: int) -> int:
        ran_on.append((threading.get_ident(), IN_CALLBACK.get()))
        await asyncio.sleep(0)
        return value * 2

    async def run() -> tuple[int, int]:
        bridge = on_loop(asyncio.get_running_loop(), callback)
        result = await asyncio.get_running_loop().run_in_executor(None, bridge, 21)
        return result, threading.get_ident()

    result, loop_thread = asyncio.run(run())
    assert result == 42 and ran_on == [(loop_thread, True)]


def test_a_call_from_the_loop_thread_runs_as_a_task_instead_of_blocking() -> None:
    seen: list[str] = []

    def plain(message: str) -> None:
        seen.append(message)

    async def run() -> None:
        conf = wrap_callbacks(asyncio.get_running_loop(), {"error_cb": plain, "bootstrap.servers": "x:1"}, ("error_cb", "stats_cb"))
        assert conf["bootstrap.servers"] == "x:1" and "stats_cb" not in conf
        assert conf["error_cb"]("from the loop") is None  # returns at once
        for _ in range(100):  # the task runs within a few turns of the loop
            if seen:
                break
            await asyncio.sleep(0)

    asyncio.run(run())
    assert seen == ["from the loop"]
