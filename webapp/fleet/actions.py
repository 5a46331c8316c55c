"""Read-side questions about brokers that views ask with an actor: operators only."""

from __future__ import annotations

from django.db.models import QuerySet

from webapp.accounts.errors import NotAllowed
from webapp.accounts.identity import is_operator
from webapp.fleet.facade import brokers
from webapp.fleet.models import BrokerNode


def check_list_brokers(user: object) -> QuerySet[BrokerNode]:
    """The brokers, for an operator (a staff user signed in with a password)."""
    if not is_operator(user):
        raise NotAllowed("Only operators may list brokers.")
    return brokers()
