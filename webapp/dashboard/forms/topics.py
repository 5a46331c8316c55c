"""Forms of the topic pages: create, edit configs, add partitions, confirm deletion."""

from __future__ import annotations

from collections.abc import Mapping

from django import forms

from webapp.catalog.facade import TENANT_TOPIC_NAME_MAX_LENGTH, topic_name_length_help
from weir.topic_config import TOPIC_CONFIGS

CONFIG_HELP = "One key=value per line, e.g. retention.ms=86400000. Known keys: " + ", ".join(sorted(TOPIC_CONFIGS))


def parse_config_lines(text: str) -> dict[str, str]:
    """``key=value`` lines (blank lines and ``#`` comments ignored) -> dict; ValidationError
    naming the line when one has no ``=`` or repeats a key."""
    configs: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, separator, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not separator or not name:
            raise forms.ValidationError(f"Line {number} is not key=value: {line!r}.")
        if name in configs:
            raise forms.ValidationError(f"Line {number} sets {name} a second time.")
        configs[name] = value
    return configs


class TopicCreateForm(forms.Form):
    """``default_replication_factor``: what an empty replication factor becomes (shown as the placeholder)."""

    name = forms.CharField(
        max_length=TENANT_TOPIC_NAME_MAX_LENGTH,
        help_text=f"Letters, digits, '.', '_' and '-'. {topic_name_length_help()}",
        error_messages={"max_length": topic_name_length_help()},
        widget=forms.TextInput(attrs={"autofocus": True, "autocomplete": "off"}),
    )
    partitions = forms.IntegerField(min_value=1, initial=1)
    replication_factor = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="At most the number of brokers. Leave empty for the default: min(3, the number of brokers), as managed Kafka services do.",
    )
    configs = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4, "placeholder": "retention.ms=86400000"}), help_text=CONFIG_HELP)

    # How the topic actions name these fields in their errors.
    ACTION_FIELDS = {"topic_name": "name", "partitions_count": "partitions", "replication_factor": "replication_factor", "configs": "configs"}

    def __init__(self, *args: object, default_replication_factor: int | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if default_replication_factor is not None:
            field = self.fields["replication_factor"]
            field.widget.attrs["placeholder"] = str(default_replication_factor)
            field.help_text = (
                f"At most the number of brokers. Leave empty for the default, {default_replication_factor} here: "
                "min(3, the number of brokers), as managed Kafka services do."
            )

    def clean_configs(self) -> dict[str, str]:
        return parse_config_lines(self.cleaned_data["configs"])


class TopicConfigsForm(forms.Form):
    """One optional field per declared topic config; empty means "use the default"."""

    def __init__(self, *args: object, overrides: Mapping[str, str], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.overrides = dict(overrides)
        for name, key in sorted(TOPIC_CONFIGS.items()):
            field = forms.CharField(
                required=False,
                label=name,
                initial=self.overrides.get(name, ""),
                help_text=f"{key.documentation} Default: {key.default}.",
                widget=forms.TextInput(attrs={"placeholder": key.default}),
            )
            self.fields[name] = field

    def operations(self) -> list[tuple[str, str, str | None]]:
        """``(name, SET|DELETE, value)`` for every config whose override changes."""
        changes: list[tuple[str, str, str | None]] = []
        for name in sorted(TOPIC_CONFIGS):
            value = (self.cleaned_data.get(name) or "").strip()
            current = self.overrides.get(name)
            if value and value != current:
                changes.append((name, "SET", value))
            elif not value and current is not None:
                changes.append((name, "DELETE", None))
        return changes


class AddPartitionsForm(forms.Form):
    partitions = forms.IntegerField(min_value=1, label="New partition count", help_text="Partitions can be added, never removed.")

    ACTION_FIELDS = {"partitions_count": "partitions"}
