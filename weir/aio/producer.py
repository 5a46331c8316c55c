"""confluent-kafka's ``AIOProducer`` and ``AsyncSerializingProducer`` over :class:`weir.Producer`.

``await producer.produce(topic, value, key, ...)`` queues the record (on the executor: a full
buffer blocks a worker, never the loop) and returns an asyncio future that resolves with the
delivered Message, or fails with ``KafkaException`` carrying the delivery error. Delivery reports
are served by a poll task on the executor while records are outstanding.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable
from typing import Any

from weir.aio.common import CONFIG_CALLBACKS, Executor, wrap_callbacks
from weir.error import KeySerializationError, ValueSerializationError
from weir.errors import KafkaError, KafkaException
from weir.message import Message
from weir.producer import Producer
from weir.serialization import MessageField, SerializationContext
from weir.serializing_producer import build_serdes, close_owned

__all__ = ["AIOProducer", "AsyncSerializingProducer"]

_POLL_SECONDS = 0.1


class AIOProducer:
    def __init__(
        self,
        producer_conf: dict[str, Any],
        max_workers: int = 4,
        executor: concurrent.futures.Executor | None = None,
        batch_size: int = 1000,
        buffer_timeout: float = 1.0,
    ) -> None:
        """``batch_size`` and ``buffer_timeout`` are accepted for confluent-kafka compatibility: the
        producer batches itself (batch.size, linger.ms), so records are queued as they come."""
        self._loop = asyncio.get_running_loop()
        self._executor = Executor(executor, max_workers)
        self._producer = Producer(wrap_callbacks(self._loop, dict(producer_conf), CONFIG_CALLBACKS))
        self._pending = 0
        self._poller: asyncio.Task[None] | None = None
        self._is_closed = False

    async def __aenter__(self) -> AIOProducer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __len__(self) -> int:
        return 0 if self._is_closed else len(self._producer)

    async def _call(self, blocking: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._is_closed:
            raise RuntimeError("Producer has been closed")
        return await self._executor.run(blocking, *args, **kwargs)

    async def produce(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> asyncio.Future[Message]:
        """Queue a record -> a future of the delivered Message (KafkaException on failure).

        Keyword arguments as Producer.produce (partition, timestamp, headers, on_delivery: also
        called, on the loop, with (error, message)).
        """
        result: asyncio.Future[Message] = self._loop.create_future()
        user_callback = kwargs.pop("on_delivery", None) or kwargs.pop("callback", None)

        def settle(error: KafkaError | None, message: Message) -> None:
            self._pending -= 1
            if user_callback is not None:
                outcome = user_callback(error, message)
                if inspect.isawaitable(outcome):
                    self._loop.create_task(outcome)  # type: ignore[arg-type]
            if result.done():
                return
            if error is not None:
                result.set_exception(KafkaException(error))
            else:
                result.set_result(message)

        def delivered(error: KafkaError | None, message: Message) -> None:  # on a poll thread
            self._loop.call_soon_threadsafe(settle, error, message)

        self._pending += 1
        try:
            await self._call(self._producer.produce, topic, value, key, on_delivery=delivered, **kwargs)
        except BaseException:
            self._pending -= 1
            raise
        if self._poller is None or self._poller.done():
            self._poller = self._loop.create_task(self._serve_deliveries())
        return result

    async def _serve_deliveries(self) -> None:
        while self._pending > 0 and not self._is_closed:
            await self._executor.run(self._producer.poll, _POLL_SECONDS)

    async def poll(self, timeout: float = 0, *args: Any, **kwargs: Any) -> int:
        """Serve delivery reports now (they are also served in the background)."""
        served: int = await self._call(self._producer.poll, timeout, *args, **kwargs)
        return served

    async def flush(self, *args: Any, **kwargs: Any) -> int:
        """Wait until every queued record is delivered (or ``timeout`` passes); records still queued."""
        remaining: int = await self._call(self._producer.flush, *args, **kwargs)
        return remaining

    async def purge(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.purge, *args, **kwargs)

    async def list_topics(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._producer.list_topics, *args, **kwargs)

    async def cluster_id(self, timeout: float = -1) -> str | None:
        metadata = await self._call(self._producer.list_topics, None, timeout)
        cluster_id: str | None = metadata.cluster_id
        return cluster_id

    async def init_transactions(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.init_transactions, *args, **kwargs)

    async def begin_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.begin_transaction, *args, **kwargs)

    async def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.send_offsets_to_transaction, *args, **kwargs)

    async def commit_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.commit_transaction, *args, **kwargs)

    async def abort_transaction(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._producer.abort_transaction, *args, **kwargs)

    async def close(self) -> None:
        """Flush, close the producer (its outstanding futures resolve first), then the executor if it is ours."""
        if self._is_closed:
            return
        await self._executor.run(self._producer.close)
        self._is_closed = True
        if self._poller is not None:
            await self._poller
        await self._executor.shutdown()


class AsyncSerializingProducer(AIOProducer):
    """An AIOProducer that serializes keys and values (``key.serializer`` / ``value.serializer``,
    or their ``.builder``); a serializer may be a coroutine function."""

    def __init__(self, producer_conf: dict[str, Any], **kwargs: Any) -> None:
        self._key_serializer, self._value_serializer, self._owned_serdes, rest = build_serdes(producer_conf, "serializer")
        super().__init__(rest, **kwargs)

    async def produce(self, topic: str, value: Any = None, key: Any = None, **kwargs: Any) -> asyncio.Future[Message]:
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, not {type(topic).__name__}")
        headers = kwargs.get("headers")
        ctx = SerializationContext(topic, MessageField.KEY, headers)
        if self._key_serializer is not None:
            try:
                key = self._key_serializer(key, ctx)
                key = await key if inspect.isawaitable(key) else key
            except Exception as error:
                raise KeySerializationError(error) from error
        ctx.field = MessageField.VALUE
        if self._value_serializer is not None:
            try:
                value = self._value_serializer(value, ctx)
                value = await value if inspect.isawaitable(value) else value
            except Exception as error:
                raise ValueSerializationError(error) from error
        return await super().produce(topic, value, key, **kwargs)

    async def close(self) -> None:
        await super().close()
        owned, self._owned_serdes = self._owned_serdes, []
        close_owned(owned)
