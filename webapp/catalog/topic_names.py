"""Which names a tenant may give its topics, with the messages the API and dashboard show.

Kafka's rules themselves live in ``weir.topic_names`` (shared with the brokers and the SDK);
this module adds the control plane's policy: internal names (``__`` prefix) are the brokers'
and a tenant can never create or name one.
"""

from __future__ import annotations

from weir.topic_names import INTERNAL_TOPIC_PREFIX, InvalidTopicNameError, is_internal_topic_name, validate_topic_name


def topic_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a tenant's topic, as a sentence for a field error, or None when it can."""
    try:
        validate_topic_name(name)
    except InvalidTopicNameError as error:
        return f"{error.reason[:1].upper()}{error.reason[1:]}."
    if is_internal_topic_name(name):
        return f"Names starting with '{INTERNAL_TOPIC_PREFIX}' are reserved for internal topics."
    return None
