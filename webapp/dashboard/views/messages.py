"""The message browser and the produce form of a topic (developer and above).

The browser scans the chosen partitions with the page's filters within a byte and time
budget (``webapp.dashboard.record_scan``), downloads what it shows as JSON or CSV, and
follows new records (the live tail: the page's script polls ``topic_messages_tail`` every
second for at most ``TAIL_MAX_SECONDS``). All of them reach the brokers through ``webapp.dashboard.data_plane`` (the SDK with a short-lived
tenant token of the signed-in tenant); broker errors are shown on the page, never as a 500.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache

from webapp.accounts.facade import Role
from webapp.catalog.facade import Topic
from webapp.dashboard.data_plane import BrowsedRecord, DataPlaneError, ScanStart, produce_record, scan_topic, tail_topic
from webapp.dashboard.forms.messages import BrowseForm, ProduceForm, parse_offsets
from webapp.dashboard.record_export import records_csv, records_json
from webapp.dashboard.record_rendering import Format, RenderedBytes, render_bytes, render_decoded
from webapp.dashboard.record_scan import Budget, Order, RecordFilter, ScanResult
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.dashboard.views.topics import tenant_topic
from webapp.schemas.facade import WireDecoder

# The budget of one browse: bytes of records read and seconds spent reading.
SCAN_MAX_BYTES = 32 * 1024 * 1024
SCAN_MAX_SECONDS = 5.0
# The budget of one live-tail poll, and how long the page keeps polling.
TAIL_POLL_SECONDS = 1.5
TAIL_MAX_SECONDS = 300


@dataclass(frozen=True)
class RecordRow:
    """A browsed record with its key, value and headers rendered for the page."""

    record: BrowsedRecord
    key: RenderedBytes
    value: RenderedBytes
    headers: list[tuple[str, RenderedBytes]]


def render_record(record: BrowsedRecord, requested: Format, decoder: WireDecoder) -> RecordRow:
    """Keys and values in Confluent's wire format are decoded by the tenant's registry (``decoder``
    caches each id's schema: make one per request)."""
    return RecordRow(
        record=record,
        key=render_payload(record.key, requested, decoder),
        value=render_payload(record.value, requested, decoder),
        headers=[(name, render_bytes(value, requested)) for name, value in record.headers],
    )


def render_payload(payload: bytes | None, requested: Format, decoder: WireDecoder) -> RenderedBytes:
    if payload is None:
        return render_bytes(payload, requested)
    return render_decoded(payload, decoder.decode(payload), requested)


@dataclass(frozen=True)
class Browse:
    """What one submission of the browser found: the form, and (when it was valid and the
    brokers answered) the scan's result, or the error to show."""

    form: BrowseForm
    result: ScanResult | None
    error: str


def browse(request: HttpRequest, topic: Topic) -> Browse:
    """Run the browser's form from the query string against ``topic`` (unsubmitted: nothing read)."""
    submitted = "partition" in request.GET or "start" in request.GET
    form = BrowseForm(request.GET if submitted else None, partition_count=topic.partition_count)
    if not submitted or not form.is_valid():
        return Browse(form, None, "")
    try:
        result = scan_topic(
            request.actor.tenant.public_id,  # type: ignore[attr-defined]
            topic.name,
            form.partitions(),
            form.scan_start(),
            form.record_filter(),
            order=Order(form.cleaned_data["order"]),
            limit=form.cleaned_data["limit"],
            budget=Budget(max_bytes=SCAN_MAX_BYTES, max_seconds=SCAN_MAX_SECONDS, clock=time.monotonic),
        )
    except DataPlaneError as failure:
        return Browse(form, None, failure.message)
    return Browse(form, result, "")


@tenant_page(Role.DEVELOPER)
def topic_messages(request: HttpRequest, name: str) -> HttpResponse:
    topic = tenant_topic(request, name)
    found = browse(request, topic)
    rows: list[RecordRow] = []
    if found.result is not None:
        requested = Format(found.form.cleaned_data["format"])
        decoder = WireDecoder(request.actor.tenant)  # type: ignore[attr-defined]
        rows = [render_record(record, requested, decoder) for record in found.result.records]
    query = request.GET.copy()
    query.pop("download", None)
    context = page_context(
        request,
        "topics",
        topic=topic,
        form=found.form,
        result=found.result,
        rows=rows,
        error=found.error,
        submitted=found.form.is_bound,
        query=query.urlencode(),
        budget_mib=SCAN_MAX_BYTES // (1024 * 1024),
        budget_seconds=SCAN_MAX_SECONDS,
        tail_seconds=TAIL_MAX_SECONDS,
    )
    return render(request, "dashboard/topics/messages.html", context)


@tenant_page(Role.DEVELOPER)
def topic_messages_download(request: HttpRequest, name: str) -> HttpResponse:
    """The records the browser shows for the same query, as ``?download=json`` or ``csv``."""
    topic = tenant_topic(request, name)
    kind = request.GET.get("download", "json")
    if kind not in ("json", "csv"):
        return HttpResponseBadRequest("download must be json or csv.", content_type="text/plain")
    found = browse(request, topic)
    if found.result is None:
        # Invalid query or brokers down: the page says what went wrong.
        return redirect(f"{reverse('dashboard:topic_messages', args=[topic.name])}?{request.GET.urlencode()}")
    if kind == "csv":
        response = HttpResponse(records_csv(found.result.records), content_type="text/csv; charset=utf-8")
    else:
        response = HttpResponse(records_json(found.result.records), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{topic.name}-records.{kind}"'
    return response


@never_cache
@tenant_page(Role.DEVELOPER)
def topic_messages_tail(request: HttpRequest, name: str) -> HttpResponse:
    """One poll of the live tail: the records written since ``positions`` (``0:12,1:5``; absent:
    the current ends, nothing returned) that match the page's filters, as table rows, and the
    positions of the next poll. JSON; bad input answers 400 with ``error``."""
    topic = tenant_topic(request, name)
    form = BrowseForm(request.GET, partition_count=topic.partition_count)
    if not form.is_valid():
        problems = "; ".join(f"{field}: {' '.join(errors)}" for field, errors in form.errors.items())
        return JsonResponse({"error": f"The filters are not valid ({problems})."}, status=400)
    partitions = form.partitions()
    positions_text = request.GET.get("positions", "")
    tenant_id = request.actor.tenant.public_id  # type: ignore[attr-defined]
    budget = Budget(max_bytes=SCAN_MAX_BYTES, max_seconds=TAIL_POLL_SECONDS, clock=time.monotonic)
    try:
        if not positions_text:
            result = scan_topic(tenant_id, topic.name, partitions, ScanStart("end"), RecordFilter(), order=Order.TIMESTAMP, limit=1, budget=budget)
        else:
            try:
                positions = parse_offsets(positions_text, partitions)
            except ValidationError as error:
                return JsonResponse({"error": " ".join(error.messages)}, status=400)
            result = tail_topic(tenant_id, topic.name, positions, form.record_filter(), budget=budget)
    except DataPlaneError as failure:
        return JsonResponse({"error": failure.message, "retriable": failure.retriable}, status=503)
    requested = Format(form.cleaned_data["format"])
    decoder = WireDecoder(request.actor.tenant)  # type: ignore[attr-defined]
    rows = [render_record(record, requested, decoder) for record in reversed(result.records)]
    html = render_to_string("dashboard/topics/record_rows.html", {"rows": rows}, request=request) if rows else ""
    positions_out = ",".join(f"{partition}:{offset}" for partition, offset in sorted(result.next_offsets.items()))
    return JsonResponse({"positions": positions_out, "count": len(rows), "html": html, "stopped_at": result.stopped_at})


@tenant_page(Role.DEVELOPER)
def topic_produce(request: HttpRequest, name: str) -> HttpResponse:
    topic = tenant_topic(request, name)
    form = ProduceForm(request.POST or None, partition_count=topic.partition_count, tenant=request.actor.tenant)  # type: ignore[attr-defined]
    if request.method == "POST" and form.is_valid():
        try:
            produced = produce_record(
                request.actor.tenant.public_id,  # type: ignore[attr-defined]
                topic.name,
                key=form.record_key(),
                value=form.record_value(),
                headers=form.cleaned_data["headers"],
                partition=form.cleaned_data["partition"],
            )
        except DataPlaneError as failure:
            form.add_error(None, failure.message)
        else:
            messages.success(request, f"Produced to partition {produced.partition} at offset {produced.offset}.")
            query = urlencode({"partition": produced.partition, "start": "offset", "offset": produced.offset, "limit": 25, "format": Format.AUTO.value})
            return redirect(f"{reverse('dashboard:topic_messages', args=[topic.name])}?{query}")
    return render(request, "dashboard/topics/produce.html", page_context(request, "topics", topic=topic, form=form))
