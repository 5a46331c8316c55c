"""Sends a leader's ISR proposals to the controller (``AlterPartition``) and hands back the answers.

The replication manager proposes an ISR change (see ``isr``) by calling :meth:`submit` from a
request or timer thread; this sender's own thread sends it, so no request waits on the
controller. Per partition the newest proposal wins; one that is no longer pending when its
turn comes (a newer leader epoch, or already answered) is dropped. Answers:

- NO_ERROR: the controller stored an ISR, which becomes the committed one;
- FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST: refused; the proposal is
  abandoned (a newer cluster map is on its way, or the next check proposes again);
- STALE_BROKER_EPOCH: the session is being renewed; retried once registered again;
- no active controller: retried after ``retry_backoff_seconds`` until it answers.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import grpc

from broker_nodes.controller_client import ControllerClient, ControllerUnavailableError
from grpc_protos.weir.v1 import controller_pb2
from weir.errors import ErrorCode

logger = logging.getLogger(__name__)

RETRY_BACKOFF_SECONDS = 0.2

# (topic, partition, leader epoch, proposed ISR, stored ISR or None when refused)
AnswerCallback = Callable[[str, int, int, tuple[int, ...], Sequence[int] | None], None]
# (topic, partition, leader epoch) -> the proposal still pending, or None
PendingLookup = Callable[[str, int, int], tuple[int, ...] | None]

_REFUSED = frozenset({ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_REQUEST})


class AlterPartitionSender:
    """See the module docstring. ``start``, ``submit`` any number of times, ``stop``."""

    def __init__(
        self,
        client: ControllerClient,
        *,
        answered: AnswerCallback,
        pending: PendingLookup,
        retry_backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    ) -> None:
        self._client = client
        self._answered = answered
        self._pending = pending
        self._retry_backoff_seconds = retry_backoff_seconds
        self._condition = threading.Condition()
        self._queue: OrderedDict[tuple[str, int], tuple[int, tuple[int, ...]]] = OrderedDict()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="alter-partition", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._condition:
            self._stopping = True
            self._condition.notify_all()
        if self._thread.is_alive():
            self._thread.join(5.0)

    def submit(self, topic: str, partition: int, isr: tuple[int, ...], leader_epoch: int) -> None:
        """Queue a proposal (an ``IsrChangeCallback``); never blocks on the controller."""
        with self._condition:
            self._queue[(topic, partition)] = (leader_epoch, tuple(isr))
            self._queue.move_to_end((topic, partition))
            self._condition.notify()

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._queue and not self._stopping:
                    self._condition.wait()
                if self._stopping:
                    return
                (topic, partition), (epoch, isr) = self._queue.popitem(last=False)
            if self._pending(topic, partition, epoch) != isr:
                continue  # superseded: a newer epoch, or answered meanwhile
            if not self._send(topic, partition, epoch, isr):
                with self._condition:
                    # Retry later unless a newer proposal for the partition arrived meanwhile.
                    self._queue.setdefault((topic, partition), (epoch, isr))
                    self._condition.wait(self._retry_backoff_seconds)

    def _send(self, topic: str, partition: int, epoch: int, isr: tuple[int, ...]) -> bool:
        """One attempt; True when the proposal got a final answer."""
        broker_epoch = self._client.broker_epoch
        if broker_epoch == 0:
            return False  # not registered (yet or again): the controller would not take it
        request = controller_pb2.AlterPartitionRequest(
            topic=topic, partition=partition, leader_id=self._client.node_id, leader_epoch=epoch, new_isr=list(isr), broker_epoch=broker_epoch
        )
        try:
            response: controller_pb2.AlterPartitionResponse = self._client.call("AlterPartition", request)
        except (ControllerUnavailableError, grpc.RpcError) as error:
            logger.warning("partition %d of %s: ISR change %s not sent yet: %s", partition, topic, list(isr), error)
            return False
        if response.error_code == ErrorCode.NO_ERROR:
            self._answered(topic, partition, epoch, isr, tuple(response.isr))
            return True
        if response.error_code == ErrorCode.STALE_BROKER_EPOCH:
            self._client.session_lost(broker_epoch)
            return False
        if response.error_code in _REFUSED:
            logger.info(
                "partition %d of %s: the controller refused ISR %s at leader epoch %d (error %d; it holds leader %d epoch %d)",
                partition,
                topic,
                list(isr),
                epoch,
                response.error_code,
                response.leader_id,
                response.leader_epoch,
            )
            self._answered(topic, partition, epoch, isr, None)
            return True
        logger.warning("partition %d of %s: ISR change answered with error %d; retrying", partition, topic, response.error_code)
        return False
