"""The controller epoch: which controller may change the catalog (Kafka's controller epoch).

A controller that takes the controller lock increases the epoch of the one ``ControllerEpoch``
row in the transaction in which it becomes active, and keeps the value. Every transaction in
which it changes the catalog starts by locking that row and checking that the epoch is still
its own (:func:`controller_transaction`). The lock alone cannot promise this: a controller
whose database connection broke has lost its advisory lock without noticing, and a standby
may have taken over. The epoch check makes such a deposed controller's changes fail with
:class:`ControllerFencedError` instead of overwriting its successor's, and brokers refuse its
cluster maps because they carry the older epoch.

Lock order: the epoch row first, then partition rows, then snapshot versions (see
``webapp.provisioning.versions``), so that controller transactions never wait in a cycle.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import transaction
from django.utils import timezone

from webapp.fleet.facade import CONTROLLER_EPOCH_ROW, ControllerEpoch


class ControllerFencedError(Exception):
    """A newer controller took over: this one must stop changing anything and step down.

    Not retriable on this controller; a broker that gets NOT_CONTROLLER asks another one.
    """

    retriable = False

    def __init__(self, epoch: int, current_epoch: int, holder: str = "") -> None:
        by = f" held by {holder}" if holder else ""
        super().__init__(f"controller epoch {epoch} was superseded: the current controller epoch is {current_epoch}{by}")
        self.epoch = epoch
        self.current_epoch = current_epoch
        self.holder = holder


def default_holder() -> str:
    """``host:pid`` of this process, recorded with the epoch it takes (for operators' logs)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def become_active(holder: str | None = None) -> int:
    """Increase the controller epoch in its own transaction and return the new value.

    Precondition: the caller holds the controller lock (``leadership.ControllerLock``) and
    serves nothing before this returns; every controller that was active before is fenced.
    """
    with transaction.atomic():
        row, _ = ControllerEpoch.objects.select_for_update().get_or_create(pk=CONTROLLER_EPOCH_ROW)
        row.epoch += 1
        row.holder = holder if holder is not None else default_holder()
        row.activated_at = timezone.now()
        row.save(update_fields=["epoch", "holder", "activated_at"])
    return row.epoch


def current_epoch() -> tuple[int, str]:
    """The epoch of the active controller and its holder, without locking; (0, "") before any."""
    row = ControllerEpoch.objects.filter(pk=CONTROLLER_EPOCH_ROW).values_list("epoch", "holder").first()
    return row if row is not None else (0, "")


def check_current(epoch: int) -> None:
    """Lock the epoch row until the transaction ends; raise ``ControllerFencedError`` unless
    ``epoch`` is still the current one.

    Precondition: inside ``transaction.atomic``.
    """
    row = ControllerEpoch.objects.select_for_update().filter(pk=CONTROLLER_EPOCH_ROW).values_list("epoch", "holder").first()
    current, holder = row if row is not None else (0, "")
    if current != epoch:
        raise ControllerFencedError(epoch, current, holder)


@contextmanager
def controller_transaction(epoch: int) -> Iterator[None]:
    """One transaction of the controller of ``epoch``: raises ``ControllerFencedError`` before
    anything is written when a newer controller exists, and holds the epoch row to commit, so
    that no successor can take over between the check and the commit."""
    with transaction.atomic():
        check_current(epoch)
        yield


@contextmanager
def operator_transaction() -> Iterator[int]:
    """A transaction of an operator's command that changes leaders without being a controller
    (``manage.py elect_leaders``): it locks the epoch row, so that it waits for a controller
    transaction in flight and no takeover interleaves with it, and yields the current epoch."""
    with transaction.atomic():
        current = ControllerEpoch.objects.select_for_update().filter(pk=CONTROLLER_EPOCH_ROW).values_list("epoch", flat=True).first()
        yield current if current is not None else 0
