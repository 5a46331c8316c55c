"""URL map of the dashboard (the signed-in web UI), namespace ``dashboard``.

Tenant pages work in the session's current tenant (see ``webapp.dashboard.tenancy``); object
URLs name objects by their public ids or (topics, consumer groups) names, looked up within
that tenant only.
"""

from django.contrib.auth import views as auth_views
from django.urls import path

from webapp.dashboard.forms.accounts import SignInForm
from webapp.dashboard.views import (
    access,
    accounts,
    acls,
    audit,
    brokers,
    groups,
    jobs,
    members,
    messages,
    overview,
    pipelines,
    schemas,
    topics,
    transactions,
    usage,
)

app_name = "dashboard"

urlpatterns = [
    path(
        "sign-in/",
        auth_views.LoginView.as_view(template_name="dashboard/sign_in.html", authentication_form=SignInForm, redirect_authenticated_user=True),
        name="login",
    ),
    path("sign-out/", auth_views.LogoutView.as_view(), name="logout"),
    path("sign-up/", accounts.sign_up, name="sign_up"),
    path("no-organisation/", accounts.no_tenant, name="no_tenant"),
    path("switch-organisation/", accounts.switch_tenant, name="switch_tenant"),
    path("invitations/<str:token>/", accounts.accept_invitation, name="accept_invitation"),
    path("", overview.overview, name="overview"),
    path("throughput/", overview.overview_throughput, name="overview_throughput"),
    path("topics/", topics.topic_list, name="topics"),
    path("topics/new/", topics.topic_create, name="topic_create"),
    path("topics/<str:name>/", topics.topic_detail, name="topic"),
    path("topics/<str:name>/configs/", topics.topic_edit_configs, name="topic_configs"),
    path("topics/<str:name>/partitions/", topics.topic_add_partitions, name="topic_partitions"),
    path("topics/<str:name>/delete/", topics.topic_delete, name="topic_delete"),
    path("topics/<str:name>/replication/", topics.topic_replication, name="topic_replication"),
    path("topics/<str:name>/throughput/", topics.topic_throughput, name="topic_throughput"),
    path("topics/<str:name>/messages/", messages.topic_messages, name="topic_messages"),
    path("topics/<str:name>/messages/download/", messages.topic_messages_download, name="topic_messages_download"),
    path("topics/<str:name>/messages/tail/", messages.topic_messages_tail, name="topic_messages_tail"),
    path("topics/<str:name>/produce/", messages.topic_produce, name="topic_produce"),
    path("schemas/", schemas.schema_list, name="schemas"),
    path("schemas/register/", schemas.schema_register, name="schema_register"),
    path("schemas/subjects/<str:subject>/", schemas.schema_subject, name="schema_subject"),
    path("schemas/subjects/<str:subject>/compatibility/", schemas.schema_compatibility, name="schema_compatibility"),
    path("schemas/subjects/<str:subject>/versions/<int:version>/", schemas.schema_version, name="schema_version"),
    path("schemas/subjects/<str:subject>/versions/<int:version>/delete/", schemas.schema_version_delete, name="schema_version_delete"),
    path("groups/", groups.group_list, name="groups"),
    path("groups/<str:group_id>/", groups.group_detail, name="group"),
    path("groups/<str:group_id>/reset-offsets/", groups.group_reset_offsets, name="group_reset_offsets"),
    path("groups/<str:group_id>/undo-reset/", groups.group_undo_reset, name="group_undo_reset"),
    path("groups/<str:group_id>/delete/", groups.group_delete, name="group_delete"),
    path("transactions/", transactions.transaction_list, name="transactions"),
    path("transactions/<str:transactional_id>/abort/", transactions.transaction_abort, name="transaction_abort"),
    path("acls/", acls.acl_list, name="acls"),
    path("acls/new/", acls.acl_create, name="acl_create"),
    path("acls/from-template/", acls.acl_template, name="acl_template"),
    path("acls/explain/", acls.acl_explain, name="acl_explain"),
    path("acls/<str:public_id>/delete/", acls.acl_delete, name="acl_delete"),
    path("service-accounts/", access.service_account_list, name="service_accounts"),
    path("service-accounts/new/", access.service_account_create, name="service_account_create"),
    path("service-accounts/<str:public_id>/", access.service_account_detail, name="service_account"),
    path("service-accounts/<str:public_id>/delete/", access.service_account_delete, name="service_account_delete"),
    path("api-keys/", access.api_key_list, name="api_keys"),
    path("api-keys/new/", access.api_key_create, name="api_key_create"),
    path("api-keys/<str:key_id>/", access.api_key_detail, name="api_key"),
    path("api-keys/<str:key_id>/revoke/", access.api_key_revoke, name="api_key_revoke"),
    path("scram-users/<str:name>/delete/", access.scram_user_delete, name="scram_user_delete"),
    path("members/", members.member_list, name="members"),
    path("members/invite/", members.member_invite, name="member_invite"),
    path("members/<str:public_id>/role/", members.member_change_role, name="member_role"),
    path("members/<str:public_id>/remove/", members.member_remove, name="member_remove"),
    path("audit-log/", audit.audit_log, name="audit_log"),
    path("jobs/", jobs.job_list, name="jobs"),
    path("jobs/<str:public_id>/", jobs.job_detail, name="job"),
    path("brokers/", brokers.broker_list, name="brokers"),
    path("brokers/table/", brokers.broker_table, name="broker_table"),
    path("usage/", usage.usage_page, name="usage"),
    path("pipelines/", pipelines.pipeline_runs, name="pipelines"),
]
