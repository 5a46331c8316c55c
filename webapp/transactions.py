"""A tenant's transactions as the REST API and the dashboard show and end them.

Everything goes through the SDK acting as the tenant (``webapp.tenant_clients``): the
AdminClient's transaction calls, the same code ``weir transactions`` runs. Transactional ids
and topics are the tenant's plain names; the brokers qualify them with the tenant, so another
tenant's id is simply not found.

A transaction is flagged ``hanging`` here when it has been open longer than its own timeout:
its coordinator should have aborted it, and meanwhile it holds back the last stable offset of
its partitions (read_committed consumers stop there). :func:`find_hanging` is Kafka's stricter
``find-hanging``: transactions left open in a topic's partitions that no coordinator will end.

Aborts are audited: one record on the ``weir.audit`` logger names who aborted what, in which
tenant and through which door (``api`` or ``dashboard``).

Errors come out typed, for both faces to answer alike: NotFound (no such transactional id or
topic), Conflict (no transaction open, or one is completing), BrokerError (the brokers cannot
be reached or failed otherwise: HTTP 503, never a 500). Authorization by role happens before
these functions are called (viewers read, developers abort).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import transaction as db_transaction

from webapp.accounts.facade import Actor, Conflict, NotFound
from webapp.audit.facade import record_event
from webapp.consumer_groups import BrokerError
from webapp.tenant_clients import REQUEST_TIMEOUT_SECONDS, BrokersUnreachable, admin_client
from weir.admin import HangingTransaction, TransactionDescription
from weir.errors import ErrorCode, KafkaError, KafkaException

audit_logger = logging.getLogger("weir.audit")

# Kafka's transaction state names, in the order a transaction goes through them.
STATE_NAMES = ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"]
ONGOING = "Ongoing"
_NOT_FOUND_CODES = frozenset({ErrorCode.TRANSACTIONAL_ID_NOT_FOUND})
_UNKNOWN_TOPIC_CODES = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode._UNKNOWN_TOPIC, ErrorCode._UNKNOWN_PARTITION})
_CONFLICT_CODES = frozenset({ErrorCode.INVALID_TXN_STATE, ErrorCode.CONCURRENT_TRANSACTIONS})


@dataclass(frozen=True)
class Transaction:
    """A transactional id's state at its coordinator; ``open_for_ms`` is None unless a transaction is open (Ongoing)."""

    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    coordinator_id: int
    start_time_ms: int | None
    open_for_ms: int | None
    partitions: list[tuple[str, int]]

    @property
    def open_for(self) -> str:
        """``open_for_ms`` for people (``3m05s``), empty when no transaction is open."""
        return format_duration_ms(self.open_for_ms) if self.open_for_ms is not None else ""

    @property
    def hanging(self) -> bool:
        """Open longer than its timeout: its coordinator should have aborted it already."""
        return self.open_for_ms is not None and self.open_for_ms > self.timeout_ms


def list_transactions(tenant_public_id: str, *, states: Iterable[str] | None = None) -> list[Transaction]:
    """The tenant's transactional ids (optionally only in ``states``), described, sorted by id."""
    with _admin(tenant_public_id, "Listing the transactions") as admin:
        listed = admin.list_transactions(states=sorted(states) if states else None, request_timeout=REQUEST_TIMEOUT_SECONDS).result(REQUEST_TIMEOUT_SECONDS)
        if not listed:
            return []
        futures = admin.describe_transactions([item.transactional_id for item in listed], request_timeout=REQUEST_TIMEOUT_SECONDS)
        now_ms = _now_ms()
        described = []
        for item in listed:
            try:
                described.append(_transaction(futures[item.transactional_id].result(REQUEST_TIMEOUT_SECONDS), now_ms))
            except KafkaException as error:
                if error.args[0].code() not in _NOT_FOUND_CODES:  # expired between the list and the describe: gone
                    raise
    return described


def get_transaction(tenant_public_id: str, transactional_id: str) -> Transaction:
    """One transactional id's state; NotFound for an id its coordinator does not know."""
    with _admin(tenant_public_id, "Describing the transaction") as admin:
        future = admin.describe_transactions([transactional_id], request_timeout=REQUEST_TIMEOUT_SECONDS)[transactional_id]
        try:
            return _transaction(future.result(REQUEST_TIMEOUT_SECONDS), _now_ms())
        except KafkaException as error:
            if error.args[0].code() in _NOT_FOUND_CODES:
                raise NotFound(f"Transactional id '{transactional_id}' does not exist.") from None
            raise


def abort_transaction(tenant_public_id: str, transactional_id: str, *, actor: Actor, door: str) -> None:
    """Abort the id's ongoing transaction (its producer is fenced) and audit it (the audit log and
    the ``weir.audit`` logger); NotFound / Conflict otherwise.

    ``actor`` is who asked (a user or service account), ``door`` how (``api``, ``dashboard``).
    """
    with _admin(tenant_public_id, "Aborting the transaction") as admin:
        try:
            admin.abort_transaction(transactional_id, request_timeout=REQUEST_TIMEOUT_SECONDS).result(REQUEST_TIMEOUT_SECONDS)
        except KafkaException as error:
            code = error.args[0].code()
            if code in _NOT_FOUND_CODES:
                raise NotFound(f"Transactional id '{transactional_id}' does not exist.") from None
            if code in _CONFLICT_CODES:
                raise Conflict(f"Transactional id '{transactional_id}' has no transaction to abort: {error.args[0].str()}") from None
            raise
    with db_transaction.atomic():
        record_event(actor, "transaction.abort", transactional_id, {})
    audit_logger.info(
        "transaction aborted",
        extra={
            "audit": {"action": "transaction.abort", "tenant": tenant_public_id, "transactional_id": transactional_id, "actor": actor.principal, "door": door}
        },
    )


def find_hanging(tenant_public_id: str, topic: str) -> list[HangingTransaction]:
    """Transactions left open in the topic's partitions that no coordinator will end; NotFound for an unknown topic."""
    with _admin(tenant_public_id, "Finding hanging transactions") as admin:
        try:
            found: list[HangingTransaction] = admin.find_hanging_transactions(topic, request_timeout=REQUEST_TIMEOUT_SECONDS).result(REQUEST_TIMEOUT_SECONDS)
        except KafkaException as error:
            if error.args[0].code() in _UNKNOWN_TOPIC_CODES | {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.INVALID_TOPIC_EXCEPTION}:
                raise NotFound(f"Topic '{topic}' does not exist.") from None
            raise
    return found


# ---------------------------------------------------------------------- helpers


@contextmanager
def _admin(tenant_public_id: str, doing: str) -> Iterator[Any]:
    """The tenant's AdminClient; SDK failures leave as BrokerError."""
    try:
        with admin_client(tenant_public_id) as admin:
            yield admin
    except BrokersUnreachable as error:
        raise BrokerError(error.message) from None
    except KafkaException as error:
        raise _broker_error(error.args[0], doing) from None


def _broker_error(error: KafkaError, doing: str) -> BrokerError:
    return BrokerError(f"{doing} failed: {error.name()}: {error.str()}", error.retriable())


def format_duration_ms(milliseconds: int) -> str:
    """``2d03h``, ``1h02m``, ``3m05s`` or ``4.2s``: the two largest units of a duration."""
    seconds = max(milliseconds, 0) // 1000
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{seconds:02d}s"
    return f"{max(milliseconds, 0) / 1000:.1f}s"


def _now_ms() -> int:
    return int(time.time() * 1000)


def _transaction(description: TransactionDescription, now_ms: int) -> Transaction:
    start = description.transaction_start_time_ms
    return Transaction(
        transactional_id=description.transactional_id,
        state=description.state,
        producer_id=description.producer_id,
        producer_epoch=description.producer_epoch,
        timeout_ms=description.transaction_timeout_ms,
        coordinator_id=description.coordinator_id,
        start_time_ms=start,
        open_for_ms=max(now_ms - start, 0) if start is not None and description.state == ONGOING else None,
        partitions=[(tp.topic, tp.partition) for tp in description.topic_partitions],
    )
