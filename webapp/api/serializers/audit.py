"""The audit log's shapes: the query filters (input) and one event (output)."""

from __future__ import annotations

from rest_framework import serializers

from webapp.audit.facade import AuditEvent, Door


class AuditLogQuerySerializer(serializers.Serializer):
    actor = serializers.CharField(required=False, max_length=150, help_text="A principal (User:sa-...), member name or API key id (substring).")
    action = serializers.CharField(required=False, max_length=64, help_text="An action (acl.create) or its family (acl).")
    door = serializers.ChoiceField(required=False, choices=Door.choices, help_text="How the change arrived.")
    since = serializers.DateTimeField(required=False, help_text="Events at or after this time (ISO 8601, UTC unless an offset is given).")
    until = serializers.DateTimeField(required=False, help_text="Events at or before this time.")

    def validate(self, attrs: dict[str, object]) -> dict[str, object]:
        since, until = attrs.get("since"), attrs.get("until")
        if since is not None and until is not None and since > until:  # type: ignore[operator]
            raise serializers.ValidationError({"until": ["The end of the range is before its start."]})
        return attrs


class AuditEventSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id", read_only=True)
    summary = serializers.DictField(read_only=True, help_text="The changed fields (never a secret).")

    class Meta:
        model = AuditEvent
        fields = ["id", "at", "actor_principal", "actor_name", "api_key_id", "door", "client_ip", "action", "target", "summary"]
        read_only_fields = fields
