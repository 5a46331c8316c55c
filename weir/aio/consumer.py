"""confluent-kafka's ``AIOConsumer`` and ``AsyncDeserializingConsumer`` over :class:`weir.Consumer`.

Each call runs on the executor, one at a time per consumer (an asyncio lock), so the consumer
is driven from asyncio code without blocking the loop. A call made from inside a callback the
running call triggered (on_assign calling ``assign()``, on_commit calling ``commit()``) runs at
once: the call holding the lock is waiting for that callback. The rebalance callbacks get the
AIOConsumer as their first argument.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Callable
from typing import Any

from weir.aio.common import CONFIG_CALLBACKS, IN_CALLBACK, Executor, on_loop, wrap_callbacks
from weir.consumer import Consumer
from weir.error import ConsumeError, KeyDeserializationError, ValueDeserializationError
from weir.message import Message
from weir.serialization import MessageField, SerializationContext
from weir.serializing_producer import build_serdes, close_owned

__all__ = ["AIOConsumer", "AsyncDeserializingConsumer"]


class AIOConsumer:
    def __init__(self, consumer_conf: dict[str, Any], max_workers: int = 2, executor: concurrent.futures.Executor | None = None) -> None:
        """``max_workers``: threads of the executor this consumer makes (two at least for a callback's
        own calls; confluent-kafka's default is 100, as librdkafka's calls can each hold one)."""
        self._loop = asyncio.get_running_loop()
        self._executor = Executor(executor, max_workers)
        self._lock = asyncio.Lock()
        self._closed = False
        self._consumer = Consumer(wrap_callbacks(self._loop, dict(consumer_conf), (*CONFIG_CALLBACKS, "on_commit")))

    async def __aenter__(self) -> AIOConsumer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _call(self, blocking: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise RuntimeError("Consumer closed")
        if IN_CALLBACK.get():
            return await self._executor.run(blocking, *args, **kwargs)
        async with self._lock:
            return await self._executor.run(blocking, *args, **kwargs)

    async def poll(self, timeout: float = -1) -> Message | None:
        message: Message | None = await self._call(self._consumer.poll, timeout)
        return message

    async def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        messages: list[Message] = await self._call(self._consumer.consume, num_messages, timeout)
        return messages

    async def subscribe(self, topics: list[str], **kwargs: Any) -> None:
        """As Consumer.subscribe; ``on_assign`` / ``on_revoke`` / ``on_lost`` get (this AIOConsumer, partitions) on the loop."""
        for name in ("on_assign", "on_revoke", "on_lost"):
            if kwargs.get(name) is not None:
                kwargs[name] = on_loop(self._loop, kwargs[name], lambda args: (self, *args[1:]))
        await self._call(self._consumer.subscribe, topics, **kwargs)

    async def unsubscribe(self) -> None:
        await self._call(self._consumer.unsubscribe)

    async def commit(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._consumer.commit, *args, **kwargs)

    async def close(self) -> None:
        if self._closed:
            return
        try:
            await self._call(self._consumer.close)
        finally:
            self._closed = True
            await self._executor.shutdown()

    async def seek(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._consumer.seek, *args, **kwargs)

    async def pause(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._consumer.pause, *args, **kwargs)

    async def resume(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._consumer.resume, *args, **kwargs)

    async def store_offsets(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._consumer.store_offsets, *args, **kwargs)

    async def committed(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._consumer.committed, *args, **kwargs)

    async def assign(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._consumer.assign, *args, **kwargs)

    async def unassign(self) -> None:
        await self._call(self._consumer.unassign)

    async def incremental_assign(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._consumer.incremental_assign, *args, **kwargs)

    async def incremental_unassign(self, *args: Any, **kwargs: Any) -> None:
        await self._call(self._consumer.incremental_unassign, *args, **kwargs)

    async def assignment(self) -> Any:
        return await self._call(self._consumer.assignment)

    async def position(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._consumer.position, *args, **kwargs)

    async def consumer_group_metadata(self) -> Any:
        return await self._call(self._consumer.consumer_group_metadata)

    async def list_topics(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._consumer.list_topics, *args, **kwargs)

    async def cluster_id(self, timeout: float = -1) -> str | None:
        metadata = await self._call(self._consumer.list_topics, None, timeout)
        cluster_id: str | None = metadata.cluster_id
        return cluster_id

    async def get_watermark_offsets(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._consumer.get_watermark_offsets, *args, **kwargs)

    async def offsets_for_times(self, *args: Any, **kwargs: Any) -> Any:
        return await self._call(self._consumer.offsets_for_times, *args, **kwargs)


class AsyncDeserializingConsumer(AIOConsumer):
    """An AIOConsumer whose poll() and consume() deserialize keys and values (``key.deserializer`` /
    ``value.deserializer`` or their ``.builder``; a deserializer may be a coroutine function)."""

    def __init__(self, consumer_conf: dict[str, Any], **kwargs: Any) -> None:
        self._key_deserializer, self._value_deserializer, self._owned_serdes, rest = build_serdes(consumer_conf, "deserializer")
        super().__init__(rest, **kwargs)

    async def poll(self, timeout: float = -1) -> Message | None:
        message = await super().poll(timeout)
        if message is None:
            return None
        return await self._deserialize(message)

    async def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        return [await self._deserialize(message) for message in await super().consume(num_messages, timeout)]

    async def _deserialize(self, message: Message) -> Message:
        error = message.error()
        if error is not None:
            raise ConsumeError(error, kafka_message=message)
        ctx = SerializationContext(message.topic() or "", MessageField.KEY, message.headers())
        key: Any = message.key()
        if self._key_deserializer is not None:
            try:
                key = self._key_deserializer(key, ctx)
                key = await key if inspect.isawaitable(key) else key
            except Exception as failure:
                raise KeyDeserializationError(exception=failure, kafka_message=message) from failure
        value: Any = message.value()
        if self._value_deserializer is not None:
            ctx.field = MessageField.VALUE
            try:
                value = self._value_deserializer(value, ctx)
                value = await value if inspect.isawaitable(value) else value
            except Exception as failure:
                raise ValueDeserializationError(exception=failure, kafka_message=message) from failure
        message.set_key(key)
        message.set_value(value)
        return message

    async def close(self) -> None:
        await super().close()
        owned, self._owned_serdes = self._owned_serdes, []
        close_owned(owned)
