"""CallThreads: unary calls completed on threads that stay, instead of one new thread per call."""

from __future__ import annotations

import threading
from typing import Any

import grpc
import pytest

from weir.call_threads import CallThreads, ChannelClosedError


def echo(request: Any, *, timeout: float | None = None, metadata: Any = None) -> Any:
    return (request, timeout, metadata)


def test_a_call_completes_its_future_with_the_answer_and_reuses_the_idle_thread() -> None:
    calls = CallThreads("test-calls", idle_seconds=5.0)
    try:
        assert calls.call(echo, 1, timeout=2.0, metadata=[("k", "v")]).result(timeout=5) == (1, 2.0, [("k", "v")])
        for request in range(2, 20):
            assert calls.call(echo, request).result(timeout=5)[0] == request
        assert calls.threads == 1
    finally:
        calls.close()


def test_a_failed_call_raises_its_error_from_result_and_a_closed_channel_reads_as_cancelled() -> None:
    def fails(request: Any, **_: Any) -> Any:
        raise grpc.RpcError("broken")

    def closed_channel(request: Any, **_: Any) -> Any:
        raise ValueError("Cannot invoke RPC on closed channel!")

    calls = CallThreads("test-calls")
    try:
        with pytest.raises(grpc.RpcError):
            calls.call(fails, None).result(timeout=5)
        with pytest.raises(ChannelClosedError) as raised:
            calls.call(closed_channel, None).result(timeout=5)
        assert raised.value.code() == grpc.StatusCode.CANCELLED
    finally:
        calls.close()


def test_concurrent_calls_get_threads_up_to_the_cap_and_the_rest_queue() -> None:
    release = threading.Event()

    def blocks(request: Any, **_: Any) -> Any:
        assert release.wait(10)
        return request

    calls = CallThreads("test-calls", max_threads=2)
    try:
        futures = [calls.call(blocks, request) for request in range(5)]
        assert calls.threads == 2
        release.set()
        assert [future.result(timeout=10) for future in futures] == list(range(5))
    finally:
        calls.close()


def test_idle_threads_leave_and_a_closed_pool_refuses_calls() -> None:
    calls = CallThreads("test-calls", idle_seconds=0.01)
    calls.call(echo, 1).result(timeout=5)
    deadline = threading.Event()
    for _ in range(500):  # bounded poll: the idle thread leaves after 10 ms
        if calls.threads == 0:
            break
        deadline.wait(0.01)
    assert calls.threads == 0
    calls.close()
    with pytest.raises(RuntimeError, match="closed"):
        calls.call(echo, 2)


def test_on_done_runs_on_the_call_thread_even_when_the_call_ends_at_once() -> None:
    ran_on: list[str] = []
    done = threading.Event()

    def record(future: Any) -> None:
        ran_on.append(threading.current_thread().name)
        done.set()

    calls = CallThreads("test-calls-on-done")
    try:
        calls.call(echo, 1, on_done=record)
        assert done.wait(5)
        assert ran_on == ["test-calls-on-done"]
    finally:
        calls.close()
