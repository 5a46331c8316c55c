"""confluent-kafka's ``confluent_kafka.aio``: asyncio clients over the synchronous ones.

Every blocking call runs on a thread pool (an executor given or one the client owns), so the
event loop never blocks; ``AIOProducer.produce`` returns an asyncio future of the delivered
:class:`~weir.Message` (or its KafkaException). Callbacks in the configuration (``error_cb``,
``throttle_cb``, ``stats_cb``, ``on_commit``) and the rebalance callbacks of ``subscribe`` are
coroutine functions (plain functions work too) run on the event loop, as in confluent-kafka.
"""

from weir.aio.consumer import AIOConsumer, AsyncDeserializingConsumer
from weir.aio.producer import AIOProducer, AsyncSerializingProducer

__all__ = ["AIOConsumer", "AIOProducer", "AsyncDeserializingConsumer", "AsyncSerializingProducer"]
