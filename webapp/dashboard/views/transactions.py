"""Transaction pages: the list (state, producer id and epoch, partitions, how long the open
transaction has been open, a hanging flag for those open past their timeout), the hanging
transactions of a topic (Kafka's find-hanging, ``?topic=``), and aborting a transaction after
a typed confirmation.

Transactions live on the brokers: every page asks them through ``webapp.transactions`` as the
current tenant, so another tenant's transactional id is not found (404). When the brokers
cannot be reached the page says so (HTTP 503), never a 500. Viewers read; developers abort
(the abort is audited as coming through the dashboard).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from webapp.accounts.facade import Conflict, NotFound, Role, role_at_least
from webapp.catalog.facade import Topic
from webapp.consumer_groups import BrokerError
from webapp.dashboard.forms.confirmation import TypedConfirmationForm
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.transactions import ONGOING, abort_transaction, find_hanging, format_duration_ms, get_transaction, list_transactions

SECTION = "transactions"


def _tenant_id(request: HttpRequest) -> str:
    return request.actor.tenant.public_id  # type: ignore[attr-defined]


@tenant_page()
def transaction_list(request: HttpRequest) -> HttpResponse:
    """The tenant's transactional ids; with ``?topic=``, also that topic's hanging transactions."""
    topic_names = list(Topic.objects.filter(tenant=request.actor.tenant).order_by("name").values_list("name", flat=True))  # type: ignore[attr-defined]
    topic = request.GET.get("topic", "")
    values: dict[str, object] = {
        "can_abort": role_at_least(request.actor.role, Role.DEVELOPER),  # type: ignore[attr-defined]
        "ongoing": ONGOING,
        "topic_names": topic_names,
        "topic": topic,
        "hanging": None,
        "transactions": [],
    }
    try:
        values["transactions"] = list_transactions(_tenant_id(request))
        if topic:
            values["hanging"] = [(item, format_duration_ms(item.open_for_ms)) for item in find_hanging(_tenant_id(request), topic)]
    except NotFound as error:
        values["hanging_error"] = error.message
    except BrokerError as error:
        return render(request, "dashboard/transactions/list.html", page_context(request, SECTION, error=error.message, **values), status=503)
    return render(request, "dashboard/transactions/list.html", page_context(request, SECTION, **values))


@tenant_page(Role.DEVELOPER)
def transaction_abort(request: HttpRequest, transactional_id: str) -> HttpResponse:
    """GET: what would be aborted, and the typed confirmation. POST: abort, then back to the list."""
    try:
        transaction = get_transaction(_tenant_id(request), transactional_id)
    except NotFound as error:
        raise Http404(error.message) from error
    except BrokerError as error:
        return render(request, "dashboard/transactions/abort.html", page_context(request, SECTION, error=error.message, transaction=None), status=503)
    form = TypedConfirmationForm(request.POST or None, expected=transactional_id, what="transactional id")
    if request.method == "POST" and form.is_valid():
        try:
            abort_transaction(_tenant_id(request), transactional_id, actor=request.actor, door="dashboard")  # type: ignore[attr-defined]
        except NotFound as error:
            raise Http404(error.message) from error
        except (Conflict, BrokerError) as error:
            form.add_error(None, error.message)
        else:
            messages.success(request, f"Aborting the transaction of {transactional_id}: its producer is fenced.")
            return redirect("dashboard:transactions")
    return render(request, "dashboard/transactions/abort.html", page_context(request, SECTION, transaction=transaction, form=form))
