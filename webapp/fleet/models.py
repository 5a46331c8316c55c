"""The broker nodes of the cluster, as the control plane knows them, and the controller epoch."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class BrokerState(models.TextChoices):
    ONLINE = "ONLINE"  # answered the last probe or heartbeat
    OFFLINE = "OFFLINE"  # did not answer for longer than the session timeout (fenced)
    STOPPED = "STOPPED"  # handed over its leaderships and stopped (controlled shutdown)
    UNKNOWN = "UNKNOWN"  # registered but never heard from


# States of a broker known not to be serving: pushes skip it, placement avoids it.
DOWN_STATES = (BrokerState.OFFLINE, BrokerState.STOPPED)


class BrokerNode(models.Model):
    """One broker: its node id (stable across restarts), where clients reach it, its rack."""

    node_id = models.PositiveIntegerField(unique=True)
    host = models.CharField(max_length=255)
    port = models.PositiveIntegerField()
    kafka_port = models.PositiveIntegerField(default=0)  # the Kafka-protocol listener on the same host; 0: none
    rack = models.CharField(max_length=64, blank=True)
    state = models.CharField(max_length=10, choices=BrokerState.choices, default=BrokerState.UNKNOWN)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    registered_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["node_id"]

    def __str__(self) -> str:
        return f"broker {self.node_id} at {self.address}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


CONTROLLER_EPOCH_ROW = 1  # the primary key of the one ControllerEpoch row


class ControllerEpoch(models.Model):
    """The epoch of the active controller (Kafka's controller epoch): one row, increased by
    each controller when it becomes active. A controller whose epoch is no longer the row's
    has been replaced and must not change anything (``webapp.controller.epoch``)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=CONTROLLER_EPOCH_ROW)
    epoch = models.PositiveBigIntegerField(default=0)
    holder = models.CharField(max_length=255, blank=True)  # "host:pid" of the controller that took it
    activated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.CheckConstraint(condition=Q(id=CONTROLLER_EPOCH_ROW), name="controller_epoch_single_row")]

    def __str__(self) -> str:
        return f"controller epoch {self.epoch} ({self.holder or 'nobody'})"
