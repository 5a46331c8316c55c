"""What both asyncio clients share: running blocking calls on the executor and callbacks on the loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# Set while a client's callback runs on the loop: calls it makes on the same client (on_assign
# calling assign()) run at once instead of queueing behind the call that is waiting for it.
IN_CALLBACK: contextvars.ContextVar[bool] = contextvars.ContextVar("weir_aio_in_callback", default=False)

CONFIG_CALLBACKS = ("error_cb", "throttle_cb", "stats_cb")


def on_loop(
    loop: asyncio.AbstractEventLoop, callback: Callable[..., Any], edit_args: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None = None
) -> Callable[..., Any]:
    """``callback`` (a coroutine function or a plain one) made callable from a client's thread:
    it runs on ``loop`` and the thread waits for it, so the client sees it complete as it would
    a synchronous callback."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if edit_args is not None:
            args = edit_args(args)

        async def run() -> Any:
            token = IN_CALLBACK.set(True)
            try:
                result = callback(*args, **kwargs)
                return await result if inspect.isawaitable(result) else result
            finally:
                IN_CALLBACK.reset(token)

        if _on_loop_thread(loop):
            # Called from the loop's own thread (during a client's construction, say): waiting here
            # would block the loop the callback needs, so it runs as a task and the caller goes on.
            loop.create_task(run())
            return None
        return asyncio.run_coroutine_threadsafe(run(), loop).result()

    return call


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:  # no loop runs in this thread
        return False


def wrap_callbacks(loop: asyncio.AbstractEventLoop, conf: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``conf`` whose callbacks ``names`` run on ``loop``."""
    wrapped = dict(conf)
    for name in names:
        if wrapped.get(name) is not None:
            wrapped[name] = on_loop(loop, wrapped[name])
    return wrapped


class Executor:
    """The thread pool a client runs its blocking calls on; shut down at close only when the client made it."""

    def __init__(self, executor: concurrent.futures.Executor | None, max_workers: int) -> None:
        if executor is None and max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.owned = executor is None
        self.executor = executor if executor is not None else concurrent.futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="weir-aio")

    async def run(self, blocking: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, functools.partial(blocking, *args, **kwargs))

    async def shutdown(self) -> None:
        if self.owned:
            await asyncio.get_running_loop().run_in_executor(None, functools.partial(self.executor.shutdown, wait=True))
