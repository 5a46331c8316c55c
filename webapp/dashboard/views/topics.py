"""Topic pages: list, create, detail (partitions and configs), edit configs, add partitions,
delete with a typed confirmation. Mutations call ``webapp.catalog.actions.topics``.

The detail page's replication table (leader, replicas, ISR, epoch, health) is also served
alone (``topic_replication``) for the page's script to refresh every few seconds: it reads
only the controller's records, never the brokers, so watching a failover costs a query."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache

from webapp.accounts.facade import Role, role_at_least
from webapp.catalog.facade import (
    HealthCounts,
    PartitionHealth,
    Topic,
    check_alter_topic_configs,
    check_create_partitions,
    check_create_topic,
    do_alter_topic_configs,
    do_create_partitions,
    do_create_topic,
    do_delete_topic,
    min_insync_replicas,
    replica_states,
    topic_health_counts,
    topic_partition_health,
)
from webapp.dashboard.action_calls import call_action
from webapp.dashboard.config_display import config_rows
from webapp.dashboard.forms.confirmation import TypedConfirmationForm
from webapp.dashboard.forms.topics import AddPartitionsForm, TopicConfigsForm, TopicCreateForm
from webapp.dashboard.fragments import fragment_of
from webapp.dashboard.tenancy import page_context, tenant_page
from webapp.dashboard.throughput_panels import topic_panel
from webapp.dashboard.views.jobs import job_in_progress
from webapp.fleet.facade import default_replication_factor
from webapp.provisioning.facade import ProvisioningJob, describe_partitions


def tenant_topic(request: HttpRequest, name: str) -> Topic:
    """The current tenant's topic ``name``; 404 for any other tenant's (never revealed)."""
    return get_object_or_404(Topic.objects.select_related("tenant"), tenant=request.actor.tenant, name=name)  # type: ignore[attr-defined]


def with_job(url: str, job: ProvisioningJob) -> str:
    """``url`` that shows ``job``'s progress inline."""
    return f"{url}?job={job.public_id}"


@dataclass(frozen=True)
class ReplicaCell:
    """One broker id in a partition's replica list, marked if it leads or has fallen out of sync."""

    broker_id: int
    is_leader: bool
    is_in_sync: bool


@dataclass(frozen=True)
class ReplicationRow:
    """One row of the replication table: where a partition lives and how healthy it is."""

    partition: int
    leader: int
    leader_epoch: int
    replicas: list[ReplicaCell]
    isr: list[int]
    health: PartitionHealth


def replication_context(topic: Topic) -> dict[str, object]:
    """What the replication table shows, from the Partition rows only (one query)."""
    rows = [
        ReplicationRow(
            partition=partition.index,
            leader=partition.leader,
            leader_epoch=partition.leader_epoch,
            replicas=[ReplicaCell(*state) for state in replica_states(partition.leader, partition.replicas, partition.isr)],
            isr=list(partition.isr),
            health=health,
        )
        for partition, health in topic_partition_health(topic)
    ]
    counts = HealthCounts()
    for row in rows:
        counts.add(row.health)
    return {"replication": rows, "health": counts, "min_insync_replicas": min_insync_replicas(topic.configs)}


@tenant_page()
def topic_list(request: HttpRequest) -> HttpResponse:
    # Partitions are prefetched for the health columns: one query for every topic listed.
    topics = Topic.objects.filter(tenant=request.actor.tenant).order_by("name").prefetch_related("partitions")  # type: ignore[attr-defined]
    query = request.GET.get("q", "").strip()
    if query:
        topics = topics.filter(name__icontains=query)
    rows = [(topic, topic_health_counts(topic)) for topic in topics]
    can_create = role_at_least(request.actor.role, Role.DEVELOPER)  # type: ignore[attr-defined]
    return render(request, "dashboard/topics/list.html", page_context(request, "topics", rows=rows, query=query, can_create=can_create))


@tenant_page(Role.DEVELOPER)
def topic_create(request: HttpRequest) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    form = TopicCreateForm(request.POST or None, default_replication_factor=default_replication_factor())
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        checked = call_action(
            form,
            check_create_topic,
            actor,
            data["name"],
            data["partitions"],
            data["replication_factor"],
            data["configs"],
            field_map=TopicCreateForm.ACTION_FIELDS,
        )
        if checked.ok:
            created = call_action(form, do_create_topic, actor, checked.value, field_map=TopicCreateForm.ACTION_FIELDS)
            if created.ok:
                change = created.value
                return redirect(with_job(reverse("dashboard:topic", args=[change.topic.name]), change.job))  # type: ignore[union-attr]
    return render(request, "dashboard/topics/create.html", page_context(request, "topics", form=form, limits=actor.tenant.limits))


@tenant_page()
def topic_detail(request: HttpRequest, name: str) -> HttpResponse:
    topic = tenant_topic(request, name)
    partitions = describe_partitions(topic)
    configs = config_rows(dict(topic.configs))
    actor = request.actor  # type: ignore[attr-defined]
    job = job_in_progress(request, request.GET.get("job"))
    context = page_context(
        request,
        "topics",
        topic=topic,
        partitions=partitions,
        unavailable=any(not partition.available for partition in partitions),
        configs=configs,
        job=job,
        can_change=role_at_least(actor.role, Role.DEVELOPER),
        total_size=sum(partition.size_bytes or 0 for partition in partitions),
        **replication_context(topic),
        **topic_panel(topic, partitions, timezone.now()),
    )
    return render(request, "dashboard/topics/detail.html", context)


@never_cache
@fragment_of(lambda name: f"{reverse('dashboard:topic', args=[name])}#replication")
@tenant_page()
def topic_replication(request: HttpRequest, name: str) -> HttpResponse:
    """The detail page's replication table alone, for its periodic refresh (a browser that
    opens it as a page is sent to the topic's page)."""
    topic = tenant_topic(request, name)
    return render(request, "dashboard/topics/replication.html", {"topic": topic, **replication_context(topic)})


@never_cache
@fragment_of(lambda name: f"{reverse('dashboard:topic', args=[name])}#throughput")
@tenant_page()
def topic_throughput(request: HttpRequest, name: str) -> HttpResponse:
    """The detail page's live throughput alone, for its periodic refresh: each refresh reads
    the brokers' counters once more (one DescribeState per leader)."""
    topic = tenant_topic(request, name)
    context = topic_panel(topic, describe_partitions(topic), timezone.now())
    return render(request, "dashboard/topics/throughput.html", {"topic": topic, **context})


@tenant_page(Role.DEVELOPER)
def topic_edit_configs(request: HttpRequest, name: str) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    topic = tenant_topic(request, name)
    form = TopicConfigsForm(request.POST or None, overrides=topic.configs)
    if request.method == "POST" and form.is_valid():
        operations = form.operations()
        if not operations:
            return redirect("dashboard:topic", topic.name)
        checked = call_action(form, check_alter_topic_configs, actor, topic, operations)
        if checked.ok:
            changed = call_action(form, do_alter_topic_configs, actor, topic, checked.value)
            if changed.ok:
                return redirect(with_job(reverse("dashboard:topic", args=[topic.name]), changed.value.job))  # type: ignore[union-attr]
    return render(request, "dashboard/topics/edit_configs.html", page_context(request, "topics", topic=topic, form=form))


@tenant_page(Role.DEVELOPER)
def topic_add_partitions(request: HttpRequest, name: str) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    topic = tenant_topic(request, name)
    form = AddPartitionsForm(request.POST or None, initial={"partitions": topic.partition_count + 1})
    if request.method == "POST" and form.is_valid():
        checked = call_action(form, check_create_partitions, actor, topic, form.cleaned_data["partitions"], field_map=AddPartitionsForm.ACTION_FIELDS)
        if checked.ok:
            grown = call_action(form, do_create_partitions, actor, topic, checked.value, field_map=AddPartitionsForm.ACTION_FIELDS)
            if grown.ok:
                return redirect(with_job(reverse("dashboard:topic", args=[topic.name]), grown.value.job))  # type: ignore[union-attr]
    return render(request, "dashboard/topics/add_partitions.html", page_context(request, "topics", topic=topic, form=form, limits=actor.tenant.limits))


@tenant_page(Role.DEVELOPER)
def topic_delete(request: HttpRequest, name: str) -> HttpResponse:
    actor = request.actor  # type: ignore[attr-defined]
    topic = tenant_topic(request, name)
    form = TypedConfirmationForm(request.POST or None, expected=topic.name, what="topic's name")
    if request.method == "POST" and form.is_valid():
        deleted = call_action(form, do_delete_topic, actor, topic)
        if deleted.ok:
            return redirect("dashboard:job", deleted.value.public_id)  # type: ignore[union-attr]
    return render(request, "dashboard/topics/delete.html", page_context(request, "topics", topic=topic, form=form))
