"""The broker nodes of the cluster, as the control plane knows them."""

from __future__ import annotations

from django.db import models


class BrokerState(models.TextChoices):
    ONLINE = "ONLINE"  # answered the last probe or heartbeat
    OFFLINE = "OFFLINE"  # did not answer for longer than the session timeout
    UNKNOWN = "UNKNOWN"  # registered but never heard from


class BrokerNode(models.Model):
    """One broker: its node id (stable across restarts), where clients reach it, its rack."""

    node_id = models.PositiveIntegerField(unique=True)
    host = models.CharField(max_length=255)
    port = models.PositiveIntegerField()
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
