"""Which names a tenant may give its topics, with the messages the API and dashboard show.

Kafka's rules themselves live in ``log_formats.topic_names`` (shared with the brokers and the SDK);
this module adds the control plane's policy: internal names (``__`` prefix) are the brokers'
and a tenant can never create or name one, and a tenant's name must fit a partition directory
together with the tenant's prefix (``log_formats.topic_names.max_topic_name_length``). The REST
serializer, the dashboard form and the topic actions (the REST API's, the dashboard's and the
one the controller runs for the SDK and CLI) all take the limit and its wording from here.
"""

from __future__ import annotations

from log_formats.topic_names import (
    INTERNAL_TOPIC_PREFIX,
    InvalidTopicNameError,
    is_internal_topic_name,
    max_topic_name_length,
    topic_name_length_reason,
    validate_topic_name,
)
from webapp.public_ids import new_tenant_id

# Every tenant id has the length of a new one (``tn-`` and ten characters), so one limit holds
# for every tenant; it is what the API schema and the form state as their maximum length.
TENANT_TOPIC_NAME_MAX_LENGTH = max_topic_name_length(new_tenant_id())


def tenant_topic_name_max_length(tenant_id: str) -> int:
    """The longest topic name tenant ``tenant_id`` may use."""
    return max_topic_name_length(tenant_id)


def topic_name_length_help(limit: int = TENANT_TOPIC_NAME_MAX_LENGTH) -> str:
    """The length rule as a sentence, for help texts and field errors."""
    reason = topic_name_length_reason(limit)
    return f"{reason[:1].upper()}{reason[1:]}."


def topic_name_problem(name: str, tenant_id: str) -> str | None:
    """Why ``name`` cannot name a topic of tenant ``tenant_id``, as a sentence for a field
    error, or None when it can."""
    try:
        validate_topic_name(name, tenant_id)
    except InvalidTopicNameError as error:
        return f"{error.reason[:1].upper()}{error.reason[1:]}."
    if is_internal_topic_name(name):
        return f"Names starting with '{INTERNAL_TOPIC_PREFIX}' are reserved for internal topics."
    return None
