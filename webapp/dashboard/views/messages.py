"""The message browser and the produce form of a topic (developer and above).

Both reach the brokers through ``webapp.dashboard.data_plane`` (the SDK with a short-lived
tenant token of the signed-in tenant); broker errors are shown on the page, never as a 500.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from webapp.accounts.facade import Role
from webapp.dashboard.data_plane import BrowsedRecord, DataPlaneError, produce_record, read_records
from webapp.dashboard.forms.messages import BrowseForm, ProduceForm
from webapp.dashboard.record_rendering import Format, RenderedBytes, render_bytes
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.dashboard.views.topics import tenant_topic


@dataclass(frozen=True)
class RecordRow:
    """A browsed record with its key, value and headers rendered for the page."""

    record: BrowsedRecord
    key: RenderedBytes
    value: RenderedBytes
    headers: list[tuple[str, RenderedBytes]]


def render_record(record: BrowsedRecord, requested: Format) -> RecordRow:
    return RecordRow(
        record=record,
        key=render_bytes(record.key, requested),
        value=render_bytes(record.value, requested),
        headers=[(name, render_bytes(value, requested)) for name, value in record.headers],
    )


@tenant_page(Role.DEVELOPER)
def topic_messages(request: HttpRequest, name: str) -> HttpResponse:
    topic = tenant_topic(request, name)
    submitted = "partition" in request.GET
    form = BrowseForm(request.GET if submitted else None, partition_count=topic.partition_count, initial={"partition": 0})
    result = None
    rows: list[RecordRow] = []
    error = ""
    if submitted and form.is_valid():
        try:
            result = read_records(request.actor.tenant.public_id, topic.name, form.cleaned_data["partition"], form.start_at(), form.cleaned_data["limit"])  # type: ignore[attr-defined]
        except DataPlaneError as failure:
            error = failure.message
        else:
            requested = Format(form.cleaned_data["format"])
            rows = [render_record(record, requested) for record in result.records]
    context = page_context(request, "topics", topic=topic, form=form, result=result, rows=rows, error=error, submitted=submitted)
    return render(request, "dashboard/topics/messages.html", context)


@tenant_page(Role.DEVELOPER)
def topic_produce(request: HttpRequest, name: str) -> HttpResponse:
    topic = tenant_topic(request, name)
    form = ProduceForm(request.POST or None, partition_count=topic.partition_count)
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
            query = urlencode({"partition": produced.partition, "start": "offset", "offset": produced.offset, "limit": 25, "format": Format.TEXT.value})
            return redirect(f"{reverse('dashboard:topic_messages', args=[topic.name])}?{query}")
    return render(request, "dashboard/topics/produce.html", page_context(request, "topics", topic=topic, form=form))
